"""UDP probe: send a datagram to a port, optionally wait for a reply that matches a pattern.

Without a pattern a silent port counts as up: UDP cannot prove a service is there, only that
nothing said it is not (an ICMP port-unreachable, seen as ConnectionRefusedError).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated

import regex
from pydantic import Field, field_validator

from upwatch.kit.inputs import Input
from upwatch.kit.languages import N_
from upwatch.kit.net import NetworkGuard
from upwatch.probes.assertions import MOST_COST, PATTERN_SECONDS, cost_of
from upwatch.probes.connect import CONNECT_ERRORS, CheckClock, failed
from upwatch.probes.fields import Host, Port
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec

# Shown in details: enough to see what came back, never a whole datagram.
_SHOWN_REPLY = 200
# Without a pattern, how long to listen for a port-unreachable (bounded by the timeout).
_SILENCE_SECONDS = 1.0


class _Listener(asyncio.DatagramProtocol):
    """Hands the first reply, or the first error (port unreachable), to ``answer``."""

    def __init__(self) -> None:
        self.answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        if not self.answer.done():
            self.answer.set_result(data)

    def error_received(self, exc: Exception) -> None:
        if not self.answer.done():
            self.answer.set_exception(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.answer.done():
            self.answer.cancel()


async def probe_udp(
    host: str,
    port: int,
    payload: str,
    expect_reply: str | None,
    timeout_seconds: float,
    guard: NetworkGuard,
) -> Outcome:
    """Resolve ``host`` through ``guard``, send ``payload`` to the first vetted address and
    judge the reply (or the silence)."""
    clock = CheckClock()
    loop = asyncio.get_running_loop()
    transport: asyncio.DatagramTransport | None = None
    try:
        async with asyncio.timeout(timeout_seconds):
            addresses = await guard.resolve(host, port)
            clock.resolved()
            address = addresses[0]
            transport, listener = await loop.create_datagram_endpoint(
                _Listener, remote_addr=(address, port)
            )
            clock.connected()
            transport.sendto(payload.encode())
            if expect_reply is None:
                return await _silence(listener, clock, address, timeout_seconds)
            reply = await listener.answer
            clock.first_byte()
    except CONNECT_ERRORS as exc:
        if isinstance(exc, ConnectionRefusedError):
            return _unreachable(clock, port)
        return failed(exc, clock, "reply", timeout_seconds)
    finally:
        if transport is not None:
            transport.close()
    return _judge(reply, expect_reply, clock, address)


async def _silence(
    listener: _Listener, clock: CheckClock, address: str, timeout_seconds: float
) -> Outcome:
    """Up unless the port says it is closed within the listening time."""
    details: dict[str, object] = {"address": address}
    try:
        async with asyncio.timeout(min(_SILENCE_SECONDS, timeout_seconds / 2)):
            reply = await asyncio.shield(listener.answer)
    except TimeoutError:
        details["reply"] = None
    else:
        details["reply"] = reply[:_SHOWN_REPLY].decode(errors="replace")
    timings = clock.timings()
    return Outcome(ok=True, response_time_ms=timings.total_ms, timings=timings, details=details)


def _unreachable(clock: CheckClock, port: int) -> Outcome:
    return Outcome(
        ok=False,
        response_time_ms=None,
        error_kind=ErrorKind.PORT_UNREACHABLE,
        error=f"port {port} unreachable: nothing listens there (ICMP port unreachable)",
        timings=clock.timings(),
    )


def _judge(reply: bytes, pattern: str, clock: CheckClock, address: str) -> Outcome:
    text = reply.decode(errors="replace")
    timings = clock.timings()
    details: dict[str, object] = {"address": address, "reply": text[:_SHOWN_REPLY]}
    try:
        found = regex.search(pattern, text, timeout=PATTERN_SECONDS)
    except TimeoutError:
        found = None
        message = f"the pattern took longer than {PATTERN_SECONDS}s on the reply"
    else:
        message = f"the reply does not match {pattern!r}"
    if found is None:
        return Outcome(
            ok=False,
            response_time_ms=timings.first_byte_ms,
            error_kind=ErrorKind.UNEXPECTED_REPLY,
            error=message,
            timings=timings,
            details=details,
        )
    return Outcome(
        ok=True, response_time_ms=timings.first_byte_ms, timings=timings, details=details
    )


class UdpProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.host is not None
        assert spec.port is not None
        settings = spec.settings
        return await probe_udp(
            spec.host,
            spec.port,
            str(settings.get("payload") or ""),
            settings.get("expectReply") or None,
            spec.timeout_seconds,
            kit.guard,
        )


class UdpConfig(Input):
    host: Host
    port: Port
    payload: Annotated[str, Field(max_length=1024)] | None = None
    expectReply: Annotated[str, Field(min_length=1, max_length=500)] | None = None

    @field_validator("expectReply")
    @classmethod
    def _a_pattern_that_compiles(cls, pattern: str | None) -> str | None:
        if pattern is None:
            return None
        if cost_of(pattern) > MOST_COST:
            raise ValueError("the pattern is too costly to compile")
        try:
            regex.compile(pattern, cache_pattern=False)  # checked, not kept
        except regex.error as exc:
            raise ValueError(f"not a pattern: {exc}") from None
        return pattern


KIND = MonitorKind(
    name="udp",
    label=N_("UDP port"),
    rank=7,
    config=UdpConfig,
    probe=UdpProbe(),
    form=(
        FormField("host", N_("Host")),
        FormField("port", N_("Port"), "number"),
        FormField("payload", N_("Payload"), hint="Text sent in the datagram"),
        FormField("expectReply", N_("Expected reply"), hint="A pattern the reply must match"),
    ),
)
