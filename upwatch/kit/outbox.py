"""What every outbox sender shares: a loop that drains due rows when woken (back-off is
``kit/backoff.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from upwatch.kit.progress import progress, stop_if_cancelled

log = logging.getLogger(__name__)


class Wakeable:
    """A sender loop: drains due rows, then sleeps until woken (after a commit that wrote
    rows) or until the poll interval passes, so rows due later are not forgotten."""

    def __init__(self) -> None:
        self._wakeup = asyncio.Event()

    def wake(self) -> None:
        self._wakeup.set()

    async def drain_forever(
        self,
        deliver_due: Callable[[], Awaitable[int]],
        poll_seconds: Callable[[], float],
        enabled: Callable[[], bool] = lambda: True,
    ) -> None:
        """A failed pass raises: the supervisor logs it, counts it and restarts the loop after
        a back-off (the rows stay due, so nothing is lost)."""
        while True:
            stop_if_cancelled()
            if enabled():
                while await deliver_due() > 0:
                    pass
            progress()
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation
            # that arrives as the event fires, and the sender would never stop.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(poll_seconds()):
                    await self._wakeup.wait()
            self._wakeup.clear()
