"""Sliding-window throttles kept in memory (login attempts, contact submissions, reset mail)."""

from __future__ import annotations

import math
from collections import deque

from upwatch.kit.clock import Clock


class SlidingWindow:
    """At most ``limit`` events per key within ``window_seconds``.

    In-process by design: one embedded process sees every request. Distributed mode
    moves this to Redis (see docs/architecture.md). Memory is bounded by the events inside
    one window: every record also expires the oldest events of any key, a few at a time.
    """

    def __init__(self, limit: int, window_seconds: float, clock: Clock) -> None:
        self.limit = limit
        self.window = window_seconds
        self._clock = clock
        self._events: dict[str, deque[float]] = {}
        self._order: deque[tuple[float, str]] = deque()

    def _now(self) -> float:
        return self._clock.now().timestamp()

    def _recent(self, key: str, now: float) -> deque[float] | None:
        events = self._events.get(key)
        if events is None:
            return None
        while events and events[0] <= now - self.window:
            events.popleft()
        if not events:
            del self._events[key]
            return None
        return events

    def retry_after(self, key: str) -> int | None:
        """Seconds until ``key`` may act again, or None when it may act now."""
        now = self._now()
        events = self._recent(key, now)
        if events is None or len(events) < self.limit:
            return None
        return max(1, math.ceil(events[0] + self.window - now))

    def record(self, key: str) -> None:
        now = self._now()
        self._expire(now)
        self._events.setdefault(key, deque()).append(now)
        self._order.append((now, key))

    def release(self, key: str) -> None:
        """Give back the latest event of ``key`` (an attempt reserved but not spent)."""
        events = self._events.get(key)
        if events:
            events.pop()
            if not events:
                del self._events[key]

    def clear(self, key: str) -> None:
        self._events.pop(key, None)

    def _expire(self, now: float) -> None:
        # Amortised O(1): each recorded event is expired once, in time order.
        while self._order and self._order[0][0] <= now - self.window:
            _, key = self._order.popleft()
            self._recent(key, now)

    def __len__(self) -> int:
        return len(self._events)
