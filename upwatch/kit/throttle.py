"""Sliding-window throttles kept in memory (login attempts, contact submissions)."""

from __future__ import annotations

import math
from collections import deque

from upwatch.kit.clock import Clock


class SlidingWindow:
    """At most ``limit`` events per key within ``window_seconds``.

    In-process by design: one embedded process sees every request. Distributed mode
    moves this to Redis (see docs/architecture.md).
    """

    def __init__(self, limit: int, window_seconds: float, clock: Clock) -> None:
        self.limit = limit
        self.window = window_seconds
        self._clock = clock
        self._events: dict[str, deque[float]] = {}

    def _recent(self, key: str) -> deque[float]:
        now = self._clock.now().timestamp()
        events = self._events.get(key)
        if events is None:
            return deque()
        while events and events[0] <= now - self.window:
            events.popleft()
        if not events:
            del self._events[key]
        return events

    def retry_after(self, key: str) -> int | None:
        """Seconds until ``key`` may act again, or None when it may act now."""
        events = self._recent(key)
        if len(events) < self.limit:
            return None
        wait = events[0] + self.window - self._clock.now().timestamp()
        return max(1, math.ceil(wait))

    def record(self, key: str) -> None:
        self._recent(key)
        self._events.setdefault(key, deque()).append(self._clock.now().timestamp())
        if len(self._events) > 100_000:
            self._prune()

    def clear(self, key: str) -> None:
        self._events.pop(key, None)

    def _prune(self) -> None:
        for key in list(self._events):
            self._recent(key)
