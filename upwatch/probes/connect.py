"""Reaching a target: resolve through the guard, connect, time each phase, say what failed.

Shared by the network probes (tcp, tls, http) so that they time and name failures alike.
The timing rule for every probe: a phase's time is recorded once the phase completed (a failed
or skipped phase stays None, its time is in ``total_ms``), and ``total_ms`` runs from the start
of the check to its result, closing the connection excluded.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass
from enum import Enum, auto
from typing import Final

from upwatch.kit.net import ConnectionPhases, NetworkGuard, TargetRefused
from upwatch.probes import evidence
from upwatch.probes.outcome import ErrorKind, Outcome, Timings

# What reaching a target can raise; anything else is a bug, not a finding about the target.
# (TimeoutError, ssl.SSLError and the guard's ResolutionFailed are all OSErrors.)
CONNECT_ERRORS: Final = (OSError, TargetRefused)

# Closing politely (a FIN, or TLS close_notify) must not hold a probe slot for long.
_CLOSE_SECONDS = 2.0


class Phase(Enum):
    """Where a check is; a failure is named after the phase it interrupted."""

    DNS = auto()
    CONNECT = auto()
    TLS = auto()
    RESPONSE = auto()


# A phase as failure evidence names it (``probes/evidence.py``).
EVIDENCE_PHASES: Final = {
    Phase.DNS: "dns",
    Phase.CONNECT: "connect",
    Phase.TLS: "tls",
    Phase.RESPONSE: "first_byte",
}


class CheckClock:
    """Times one check's phases, in milliseconds, and knows which phase is under way."""

    def __init__(self) -> None:
        self.phase = Phase.DNS
        self._started = self._lap_started = time.perf_counter()
        self.dns_ms: float | None = None
        self.connect_ms: float | None = None
        self.tls_ms: float | None = None
        self.first_byte_ms: float | None = None
        self.addresses: list[str] = []  # what the guard resolved, for a failure's evidence

    def _lap(self, following: Phase) -> float:
        now = time.perf_counter()
        elapsed = (now - self._lap_started) * 1000
        self._lap_started = now
        self.phase = following
        return elapsed

    def resolved(self) -> None:
        self.dns_ms = self._lap(Phase.CONNECT)

    def connected(self) -> None:
        self.connect_ms = self._lap(Phase.TLS)

    def secured(self) -> None:
        self.tls_ms = self._lap(Phase.RESPONSE)

    def first_byte(self) -> None:
        """The response's headers arrived; counted from the start of the check."""
        self.first_byte_ms = self.elapsed_ms()

    def adopt(self, phases: ConnectionPhases) -> None:
        """Take DNS and connect times measured by an aiohttp session's trace instead."""
        self.dns_ms = phases.dns_ms
        self.connect_ms = phases.connect_ms

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self._started) * 1000

    def timings(self) -> Timings:
        return Timings(
            dns_ms=self.dns_ms,
            connect_ms=self.connect_ms,
            tls_ms=self.tls_ms,
            first_byte_ms=self.first_byte_ms,
            total_ms=self.elapsed_ms(),
        )


def _connect_message(error: OSError) -> str:
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    return error.strerror or str(error) or type(error).__name__


def classify(
    error: OSError | TargetRefused, phase: Phase, awaited: str, timeout_seconds: float
) -> tuple[ErrorKind, str]:
    """What failed, from the error and the phase it interrupted.

    ``awaited`` names what did not arrive in time ("connection", "TLS handshake"), for the
    timeout message. Order matters: the subclasses of ``OSError`` come first.
    """
    match error:
        case TargetRefused():
            return ErrorKind.REFUSED_TARGET, f"refused target: {error}"
        case TimeoutError():
            return ErrorKind.TIMEOUT, f"no {awaited} within {timeout_seconds:g}s"
        case ssl.SSLCertVerificationError():
            reason = error.verify_message or str(error)
            return ErrorKind.TLS, f"certificate verification failed: {reason}"
        case ssl.SSLError():
            return ErrorKind.TLS, f"TLS handshake failed: {error}"
    match phase:
        case Phase.DNS:
            return ErrorKind.DNS, f"DNS lookup failed: {error}"
        case Phase.CONNECT:
            return ErrorKind.CONNECT, f"cannot connect: {_connect_message(error)}"
        case _:
            # Also a peer that hangs up mid-handshake, as plain-TCP services on the port do.
            return ErrorKind.TLS, f"TLS handshake failed: {error}"


def failed(
    error: OSError | TargetRefused, clock: CheckClock, awaited: str, timeout_seconds: float
) -> Outcome:
    """The outcome of a check that could not reach its target."""
    kind, message = classify(error, clock.phase, awaited, timeout_seconds)
    seen = evidence.build(EVIDENCE_PHASES[clock.phase], error=error, addresses=clock.addresses)
    return Outcome(
        ok=False,
        response_time_ms=None,
        error_kind=kind,
        error=message,
        timings=clock.timings(),
        evidence=seen,
    )


@dataclass(frozen=True, slots=True)
class Stream:
    """An open TCP connection and where it went."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    address: str
    addresses: list[str]

    async def close(self) -> None:
        self.writer.close()
        try:
            async with asyncio.timeout(_CLOSE_SECONDS):
                await self.writer.wait_closed()
        except (TimeoutError, OSError):
            self.writer.transport.abort()


async def connect(host: str, port: int, guard: NetworkGuard, clock: CheckClock) -> Stream:
    """Resolve ``host`` through ``guard``, then connect to the first address that accepts.

    Addresses are tried in resolver order, one after another on purpose: a probe wants one
    clear answer, not the fastest of a race. Raises what ``CONNECT_ERRORS`` lists; the
    caller bounds the time.
    """
    addresses = await guard.resolve(host, port)
    clock.resolved()
    clock.addresses = addresses
    last_error: OSError | None = None
    for address in addresses:
        try:
            reader, writer = await asyncio.open_connection(address, port)
        except OSError as exc:
            last_error = exc
            continue
        clock.connected()
        return Stream(reader=reader, writer=writer, address=address, addresses=addresses)
    assert last_error is not None  # the guard never returns an empty list
    raise last_error
