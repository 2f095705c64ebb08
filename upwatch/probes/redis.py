"""Redis probe: connect with the monitor's URL (``rediss://`` for TLS) and send ``PING``."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import model_validator

from upwatch.kit.inputs import Input
from upwatch.kit.languages import N_
from upwatch.kit.net import NetworkGuard, TargetRefused
from upwatch.probes.connect import CONNECT_ERRORS, CheckClock
from upwatch.probes.databases import Target, reach, refused, scrubbed, unreached, up, url_type
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec

DEFAULT_PORT = 6379
SCHEMES = ("redis", "rediss")


if TYPE_CHECKING:
    from redis.asyncio.connection import Connection


@functools.cache
def _named_ssl_connection() -> Any:
    """The driver is imported on the first check, not with the registry: a service that
    watches no Redis never loads it (about 6 MB in every process)."""
    from redis.asyncio.connection import SSLConnection

    class NamedSSLConnection(SSLConnection):
        """TLS to an address, its certificate checked against the host's name."""

        def __init__(self, server_name: str, **given: Any) -> None:
            super().__init__(**given)
            self._server_name = server_name

        def _connection_arguments(self) -> Mapping[str, Any]:
            return {**super()._connection_arguments(), "server_hostname": self._server_name}

    return NamedSSLConnection


def _version(info: object) -> str | None:
    text = info.decode(errors="replace") if isinstance(info, bytes) else str(info)
    for line in text.splitlines():
        if line.startswith("redis_version:"):
            return line.partition(":")[2].strip()
    return None


async def probe_redis(url: str, timeout_seconds: float, guard: NetworkGuard) -> Outcome:
    """Connect to the vetted address of the URL's host and send ``PING``."""
    from redis import exceptions as redis_errors
    from redis.asyncio.connection import Connection
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    target = Target.parse(url, DEFAULT_PORT)
    clock = CheckClock()
    connection: Connection | None = None

    async def attempt(address: str) -> Connection:
        given: dict[str, Any] = {
            "host": address,
            "port": target.port,
            "username": target.user,
            "password": target.password,
            "db": int(target.database or 0),
            # One try: a retry would hide what failed and overrun the check's time.
            "retry": Retry(NoBackoff(), 0),
        }
        made = (
            _named_ssl_connection()(target.host, **given)
            if target.scheme == "rediss"
            else Connection(**given)
        )
        try:
            await made.connect()
        except redis_errors.ConnectionError as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, OSError):
                raise cause from None
            raise
        return made

    try:
        async with asyncio.timeout(timeout_seconds):
            live, address = await reach(target, guard, clock, attempt)
            connection = live
            await live.send_command("PING")
            reply = await live.read_response()
            if reply not in (b"PONG", "PONG"):
                outcome = refused(ErrorKind.PROTOCOL, f"PING answered {reply!r}", clock)
                return scrubbed(outcome, target)
            await live.send_command("INFO", "server")
            version = _version(await live.read_response())
    except (*CONNECT_ERRORS, TargetRefused) as exc:
        return scrubbed(unreached(exc, clock, timeout_seconds), target)
    except redis_errors.AuthenticationError as exc:
        return scrubbed(refused(ErrorKind.AUTH, f"authentication failed: {exc}", clock), target)
    except redis_errors.ResponseError as exc:
        kind = ErrorKind.AUTH if str(exc).startswith(("NOAUTH", "WRONGPASS")) else None
        message = f"the server said: {exc}"
        return scrubbed(refused(kind or ErrorKind.DATABASE, message, clock), target)
    except redis_errors.RedisError as exc:
        outcome = refused(ErrorKind.PROTOCOL, f"not a Redis server: {exc}", clock)
        return scrubbed(outcome, target)
    finally:
        if connection is not None:
            await connection.disconnect(nowait=True)
    return up(clock, {"address": address, "serverVersion": version})


class RedisProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.url is not None
        return await probe_redis(spec.url, spec.timeout_seconds, kit.guard)


class RedisConfig(Input):
    url: url_type(SCHEMES, "rediss://default:secret@cache.example.com:6380/0")  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _database_number(self) -> RedisConfig:
        database = Target.parse(self.url, DEFAULT_PORT).database
        if database is not None and not database.isdigit():
            raise ValueError("the URL's path must be a database number, e.g. /0")
        return self


KIND = MonitorKind(
    name="redis",
    label=N_("Redis"),
    rank=15,
    config=RedisConfig,
    probe=RedisProbe(),
    form=(
        FormField(
            "url", N_("Connection URL"), hint="e.g. redis://:secret@cache.example.com:6379/0"
        ),
    ),
    url_password_secret=True,
    url_schemes=SCHEMES,
)
