"""Sliding-window throttles (login attempts, contact submissions, reset mail, subscriptions).

``SlidingWindow`` keeps its events in the process: one embedded process sees every request.
``RedisWindow`` keeps them in Redis (a sorted set per key, scored by time), so a limit holds
across API replicas when ``UPWATCH_REDIS_URL`` is set. Both take a slot atomically
(``take``): two concurrent attempts never share the last free one.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from upwatch.kit.clock import Clock

if TYPE_CHECKING:
    from redis.asyncio import Redis


class Window(Protocol):
    """At most ``limit`` events per key within a window of seconds."""

    async def take(self, key: str) -> int | None:
        """Record an event if ``key`` is under the limit (None), else the seconds until it
        may act again (nothing recorded)."""

    async def retry_after(self, key: str) -> int | None:
        """Seconds until ``key`` may act again, or None when it may act now."""

    async def record(self, key: str) -> None: ...

    async def release(self, key: str) -> None:
        """Give back the latest event of ``key`` (an attempt reserved but not spent)."""

    async def clear(self, key: str) -> None: ...


class SlidingWindow:
    """In memory. Bounded by the events inside one window: every record also expires the
    oldest events of any key, a few at a time."""

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

    def _wait(self, key: str, now: float) -> int | None:
        events = self._recent(key, now)
        if events is None or len(events) < self.limit:
            return None
        return max(1, math.ceil(events[0] + self.window - now))

    async def take(self, key: str) -> int | None:
        # No await between the check and the record: atomic on the event loop.
        wait = self._wait(key, self._now())
        if wait is None:
            self._record(key)
        return wait

    async def retry_after(self, key: str) -> int | None:
        return self._wait(key, self._now())

    async def record(self, key: str) -> None:
        self._record(key)

    def _record(self, key: str) -> None:
        now = self._now()
        self._expire(now)
        self._events.setdefault(key, deque()).append(now)
        self._order.append((now, key))

    async def release(self, key: str) -> None:
        events = self._events.get(key)
        if events:
            events.pop()
            if not events:
                del self._events[key]

    async def clear(self, key: str) -> None:
        self._events.pop(key, None)

    def _expire(self, now: float) -> None:
        # Amortised O(1): each recorded event is expired once, in time order.
        while self._order and self._order[0][0] <= now - self.window:
            _, key = self._order.popleft()
            self._recent(key, now)

    def __len__(self) -> int:
        return len(self._events)


# Atomic in Redis: expire the key's old events, then add one if there is room, else say how
# long until the oldest leaves the window. -1 means taken.
_TAKE = """
local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) < limit then
  if ARGV[4] ~= '' then
    redis.call('ZADD', key, now, ARGV[4])
    redis.call('EXPIRE', key, math.ceil(window) + 1)
  end
  return -1
end
local oldest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
return math.max(1, math.ceil(oldest + window - now))
"""


class RedisWindow:
    """In Redis, shared by every process of a deployment. Keys are digests of the throttled
    value (an address, an e-mail), so their length is fixed and nothing personal is stored."""

    def __init__(
        self,
        redis: Redis,
        name: str,
        limit: int,
        window_seconds: float,
        clock: Clock,
        prefix: str = "upwatch",
    ) -> None:
        self.redis = redis
        self.limit = limit
        self.window = window_seconds
        self._clock = clock
        self._prefix = f"{prefix}:throttle:{name}:"
        self._take: Any = redis.register_script(_TAKE)

    def _key(self, key: str) -> str:
        return self._prefix + hashlib.sha256(key.encode()).hexdigest()[:32]

    async def _run(self, key: str, member: str) -> int | None:
        now = self._clock.now().timestamp()
        args = [repr(now), repr(float(self.window)), str(self.limit), member]
        answer = int(await self._take(keys=[self._key(key)], args=args))
        return None if answer < 0 else answer

    async def take(self, key: str) -> int | None:
        return await self._run(key, uuid.uuid4().hex)

    async def retry_after(self, key: str) -> int | None:
        return await self._run(key, "")

    async def record(self, key: str) -> None:
        now = self._clock.now().timestamp()
        redis_key = self._key(key)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zadd(redis_key, {uuid.uuid4().hex: now})
            pipe.zremrangebyscore(redis_key, "-inf", now - self.window)
            pipe.expire(redis_key, math.ceil(self.window) + 1)
            await pipe.execute()

    async def release(self, key: str) -> None:
        await self.redis.zpopmax(self._key(key))

    async def clear(self, key: str) -> None:
        await self.redis.delete(self._key(key))
