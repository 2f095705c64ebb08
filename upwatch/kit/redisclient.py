"""The one way this code opens Redis: bounded waits, and a few quick retries of a command
whose connection broke (a Redis restart, a dropped idle connection), so a blip costs a
retry, not a failed request. What still fails answers 503 (``kit/errors.py``)."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import EqualJitterBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

# Long enough to ride out a restart's first second, short enough to answer a request soon.
_RETRIES = 4


def connect(url: str) -> Redis:
    return Redis.from_url(
        url,
        socket_connect_timeout=5,
        # Every command but a blocking read answers at once; a blocking read asks for its
        # own wait (BLOCK), and redis-py extends the socket timeout by it.
        socket_timeout=10,
        health_check_interval=15,
        # Jittered like every back-off here (kit/backoff.py), so clients do not reconnect in step.
        retry=Retry(EqualJitterBackoff(cap=1.0, base=0.05), _RETRIES),
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
    )
