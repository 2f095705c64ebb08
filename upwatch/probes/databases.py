"""What the database types (postgres, mysql, redis) share: a connection URL whose host is
reached through the guard, and failures named alike with the password scrubbed out."""

from __future__ import annotations

import errno
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar
from urllib.parse import quote

from pydantic import Field
from yarl import URL

from upwatch.kit.inputs import worded
from upwatch.kit.net import NetworkGuard, TargetRefused
from upwatch.probes.connect import CheckClock, Phase, failed
from upwatch.probes.outcome import ErrorKind, Outcome

T = TypeVar("T")
MASK = "****"
# Errors that mean the address did not take the connection: the next address is tried.
_UNREACHED = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH}


def url_type(schemes: tuple[str, ...], example: str) -> object:
    """The ``url`` field of a database type: one of ``schemes``, no spaces."""
    alternatives = "|".join(schemes)
    return Annotated[
        str,
        Field(
            min_length=1,
            max_length=2048,
            pattern=worded(
                rf"^({alternatives})://[^\u0000-\u0020\u007f-\u009f]+$",
                f"a {' or '.join(s + '://' for s in schemes)} URL without spaces",
            ),
            description=f"The connection URL, e.g. {example}; its password is a secret",
        ),
    ]


@dataclass(frozen=True)
class Target:
    """A connection URL, read."""

    scheme: str
    host: str
    port: int
    user: str | None
    password: str | None
    database: str | None
    query: dict[str, str]

    @classmethod
    def parse(cls, url: str, default_port: int) -> Target:
        parsed = URL(url)
        host = parsed.host or ""
        return cls(
            scheme=parsed.scheme,
            host=host[1:-1] if host.startswith("[") else host,
            port=parsed.explicit_port or default_port,
            user=parsed.user or None,
            password=parsed.password,
            database=parsed.path.lstrip("/") or None,
            query={key: parsed.query[key] for key in parsed.query},
        )

    def scrub(self, text: str) -> str:
        """``text`` without the password: drivers quote their DSN in some messages."""
        if self.password:
            for form in {self.password, quote(self.password, safe=""), quote(self.password)}:
                text = text.replace(form, MASK)
        return text


async def reach(
    target: Target,
    guard: NetworkGuard,
    clock: CheckClock,
    attempt: Callable[[str], Awaitable[T]],
) -> tuple[T, str]:
    """Connect the driver (``attempt``) to each vetted address of the target in turn, never
    to its name, so the driver cannot resolve it past the guard."""
    addresses = await guard.resolve(target.host, target.port)
    clock.resolved()
    last: OSError | None = None
    for address in addresses:
        try:
            found = await attempt(address)
        except OSError as exc:
            if exc.errno not in _UNREACHED:
                raise
            last = exc
            continue
        clock.connected()
        return found, address
    assert last is not None  # the guard never returns an empty list
    raise last


def unreached(error: OSError | TargetRefused, clock: CheckClock, timeout_seconds: float) -> Outcome:
    """A target not reached, or a connection that broke on the way."""
    # A connection that broke once taken (a reset, an early close) is a server not speaking
    # the protocol, even while the driver is still logging in.
    connecting = clock.phase is Phase.DNS or getattr(error, "errno", None) in _UNREACHED
    if connecting or isinstance(error, (TargetRefused, TimeoutError, ssl.SSLError)):
        return failed(error, clock, "answer", timeout_seconds)
    return refused(ErrorKind.PROTOCOL, f"the connection broke: {error}", clock)


def refused(kind: ErrorKind, message: str, clock: CheckClock) -> Outcome:
    """The server answered, but not with a ping's reply."""
    return Outcome(
        ok=False, response_time_ms=None, error_kind=kind, error=message, timings=clock.timings()
    )


def scrubbed(outcome: Outcome, target: Target) -> Outcome:
    if outcome.error is None:
        return outcome
    return Outcome(
        ok=outcome.ok,
        response_time_ms=outcome.response_time_ms,
        error_kind=outcome.error_kind,
        error=target.scrub(outcome.error),
        timings=outcome.timings,
        details=outcome.details,
    )


def up(clock: CheckClock, details: dict[str, object]) -> Outcome:
    timings = clock.timings()
    return Outcome(ok=True, response_time_ms=timings.total_ms, timings=timings, details=details)
