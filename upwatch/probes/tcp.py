"""TCP probe: the port accepts a connection, which is then closed at once."""

from __future__ import annotations

import asyncio
from datetime import datetime

from upwatch.kit.inputs import Input
from upwatch.kit.languages import N_
from upwatch.kit.net import NetworkGuard
from upwatch.probes.connect import CONNECT_ERRORS, CheckClock, connect, failed
from upwatch.probes.fields import Host, Port
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec


async def probe_tcp(host: str, port: int, timeout_seconds: float, guard: NetworkGuard) -> Outcome:
    """Resolve ``host`` through ``guard`` and open (then close) a TCP connection to ``port``."""
    clock = CheckClock()
    try:
        async with asyncio.timeout(timeout_seconds):
            stream = await connect(host, port, guard, clock)
    except CONNECT_ERRORS as exc:
        return failed(exc, clock, "connection", timeout_seconds)
    timings = clock.timings()
    await stream.close()
    return Outcome(
        ok=True,
        response_time_ms=timings.total_ms,
        timings=timings,
        details={"address": stream.address, "addresses": stream.addresses},
    )


class TcpProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.host is not None
        assert spec.port is not None
        return await probe_tcp(spec.host, spec.port, spec.timeout_seconds, kit.guard)


class TcpConfig(Input):
    host: Host
    port: Port


KIND = MonitorKind(
    name="tcp",
    label=N_("TCP port"),
    rank=2,
    config=TcpConfig,
    probe=TcpProbe(),
    form=(FormField("host", N_("Host")), FormField("port", N_("Port"), "number")),
)
