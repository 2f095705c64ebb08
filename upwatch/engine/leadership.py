"""One scheduler at a time: a lease in Redis with a fencing token.

The leader holds ``{prefix}:scheduler:lease`` (SET NX with a time to live) and renews it every
third of that time, only while the value is still its own token (one Lua script, so a lease
that expired and went to another is never renewed by the old leader). Each new leader takes a
fresh number from ``{prefix}:scheduler:epoch`` (the fencing token, in its log lines). A leader
killed with SIGKILL stops renewing and a standby, trying every third of the time to live,
leads within about ``4/3 x ttl`` (8 s at the default 6 s).

Why Redis and not a PostgreSQL lock: the scheduler's jobs go through Redis, so it can lead
exactly when it can work; a PostgreSQL restart must not stop the checks (their results wait in
Redis until they can be written), and a lock held on a PostgreSQL connection dies with it.
A leader that cannot renew (Redis away) stops leading once its lease has run out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from upwatch.kit.progress import progress

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class LostLeadership(Exception):
    """The lease is someone else's now, or could not be renewed in time."""


class Lease:
    def __init__(self, redis: Redis, prefix: str, name: str, ttl_seconds: float = 6.0) -> None:
        self.redis = redis
        self.key = f"{prefix}:{name}:lease"
        self.epoch_key = f"{prefix}:{name}:epoch"
        self.ttl_ms = max(10, round(ttl_seconds * 1000))
        self.every = ttl_seconds / 3
        self._renew: Any = redis.register_script(_RENEW)
        self._release: Any = redis.register_script(_RELEASE)
        self.epoch: int | None = None  # while leading

    async def lead(
        self,
        work: Callable[[], Coroutine[Any, Any, None]],
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        """Stand by until the lease is ours, then run ``work`` while it stays ours.

        Returns never: raises ``LostLeadership`` (the supervisor then starts over, as a
        standby), or whatever ``work`` raises.
        """
        token = uuid.uuid4().hex
        told = False
        while not await self.redis.set(self.key, token, nx=True, px=self.ttl_ms):
            if not told:
                log.info("another scheduler leads; standing by")
                told = True
            progress()
            await asyncio.sleep(self.every)
        self.epoch = int(await self.redis.incr(self.epoch_key))
        log.info("this scheduler leads now (epoch %d)", self.epoch)
        if on_change is not None:
            on_change(True)
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._hold(token))
                tasks.create_task(work())
        except* LostLeadership as group:
            raise group.exceptions[0] from None
        finally:
            log.info("this scheduler no longer leads (epoch %s)", self.epoch)
            self.epoch = None
            if on_change is not None:
                on_change(False)
            with contextlib.suppress(Exception):
                await self._release(keys=[self.key], args=[token])

    async def _hold(self, token: str) -> None:
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(self.every)
            try:
                kept = await self._renew(keys=[self.key], args=[token, self.ttl_ms])
            except Exception as exc:
                # Redis away: keep leading until the lease would have run out, not longer.
                if time.monotonic() - renewed >= self.ttl_ms / 1000:
                    raise LostLeadership(f"the lease could not be renewed: {exc}") from exc
                continue
            if not kept:
                raise LostLeadership("the lease expired and may be another scheduler's")
            renewed = time.monotonic()
