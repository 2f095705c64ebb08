"""Monitor changes between processes: API replicas tell the scheduler through a Redis stream.

In one process the API calls ``engine.changed(id)`` after a commit. With the scheduler in
another process, ``ChangeFeed`` (the ``MonitorChanges`` port of an API or ingester process)
appends the ids to ``{prefix}:changes`` and the leading scheduler follows that stream from
where it was when it loaded the monitors, so a change made while it loaded is not missed.
Nothing is lost when no scheduler runs: a scheduler that starts loads every monitor anyway.
The stream is capped (MAXLEN ~); only a scheduler many thousand changes behind would miss
some, and it reloads everything when it takes the lead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from upwatch.kit.progress import progress

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

_KEEP = 100_000  # entries kept in the stream (approximately)
_HELD = 100_000  # changes an API process holds while Redis is away


def changes_key(prefix: str) -> str:
    return f"{prefix}:changes"


class ChangeFeed:
    """The writing end: ``changed`` is called after commit (no waiting); ``run`` sends."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self.redis = redis
        self.key = changes_key(prefix)
        # Each id once, with the number of its latest mark: an id marked again while it is
        # being sent stays for the next send.
        self._pending: dict[str, int] = {}
        self._marks = 0
        self._queued = asyncio.Event()

    def changed(self, monitor_id: str) -> None:
        if len(self._pending) < _HELD or monitor_id in self._pending:
            self._marks += 1
            self._pending[monitor_id] = self._marks
        self._queued.set()

    async def run(self) -> None:
        """Send queued changes; a failed send keeps them for the next run."""
        while True:
            await self._queued.wait()
            self._queued.clear()
            try:
                await self.flush()
            except BaseException:
                self._queued.set()
                raise
            progress()

    async def flush(self) -> None:
        sending = dict(self._pending)
        if not sending:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for monitor_id in sending:
                pipe.xadd(self.key, {b"id": monitor_id}, maxlen=_KEEP, approximate=True)
            await pipe.execute()
        for monitor_id, mark in sending.items():
            if self._pending.get(monitor_id) == mark:
                del self._pending[monitor_id]


class ChangeReader:
    """The reading end, in the leading scheduler."""

    def __init__(self, redis: Redis, prefix: str, block_seconds: float = 1.0) -> None:
        self.redis = redis
        self.key = changes_key(prefix)
        self.block_ms = max(1, round(block_seconds * 1000))

    async def position(self) -> str:
        """Where the stream ends now: follow from here after loading the monitors."""
        last: Any = await self.redis.xrevrange(self.key, count=1)
        return str(last[0][0].decode()) if last else "0-0"

    async def follow(self, since: str, changed: Callable[[str], None]) -> None:
        """Call ``changed(id)`` for each change after ``since``, forever."""
        while True:
            answer: Any = await self.redis.xread({self.key: since}, block=self.block_ms, count=1000)
            for _stream, entries in answer or ():
                for entry_id, fields in entries:
                    since = entry_id.decode()
                    monitor_id = fields.get(b"id")
                    if monitor_id is not None:
                        changed(monitor_id.decode())
            progress()
