"""Ping probe: ICMP echo requests to a host, judged on packet loss; RTT as the response time."""

from __future__ import annotations

import asyncio
import os
from datetime import datetime
from pathlib import Path
from typing import Annotated

from pydantic import Field

from upwatch.kit.inputs import Input
from upwatch.kit.languages import N_
from upwatch.kit.net import NetworkGuard
from upwatch.probes.connect import CONNECT_ERRORS, CheckClock, failed
from upwatch.probes.fields import Host
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec

DEFAULT_PACKET_COUNT = 3
_PING_GROUP_RANGE = Path("/proc/sys/net/ipv4/ping_group_range")
# Between echo requests: short, as a check's whole time is bounded by its timeout.
_INTERVAL_SECONDS = 0.2


def icmp_privileged(group_range: Path = _PING_GROUP_RANGE) -> bool | None:
    """True for raw sockets (root), False for unprivileged ICMP sockets, None when neither."""
    if os.geteuid() == 0:
        return True
    try:
        low, high = (int(part) for part in group_range.read_text().split())
    except (OSError, ValueError):
        return None
    return False if low <= os.getegid() <= high else None


async def probe_ping(
    host: str,
    packet_count: int,
    max_loss_percent: float,
    timeout_seconds: float,
    guard: NetworkGuard,
) -> Outcome:
    """Resolve ``host`` through ``guard`` and ping the first vetted address."""
    clock = CheckClock()
    try:
        async with asyncio.timeout(timeout_seconds):
            addresses = await guard.resolve(host, 0)
    except CONNECT_ERRORS as exc:
        return failed(exc, clock, "DNS answer", timeout_seconds)
    clock.resolved()
    privileged = icmp_privileged()
    if privileged is None:
        return _unavailable(clock, "ICMP needs root or net.ipv4.ping_group_range")
    address = addresses[0]
    # Each packet waits for its reply at most its share of what is left of the check's time,
    # the pauses between packets taken out first.
    left = timeout_seconds - clock.elapsed_ms() / 1000 - _INTERVAL_SECONDS * (packet_count - 1)
    per_packet = max(0.1, left / packet_count)
    # Imported when a check runs: the probe worker process holds only the libraries its
    # monitors use (docs/architecture.md).
    from icmplib import async_ping
    from icmplib.exceptions import ICMPLibError, SocketPermissionError

    try:
        result = await async_ping(
            address,
            count=packet_count,
            interval=_INTERVAL_SECONDS,
            timeout=per_packet,
            privileged=privileged,
        )
    except SocketPermissionError:
        return _unavailable(clock, "ICMP needs root or net.ipv4.ping_group_range")
    except (ICMPLibError, OSError) as exc:
        return _unavailable(clock, f"ping failed: {exc}")
    timings = clock.timings()
    loss = round(result.packet_loss * 100, 1)
    details: dict[str, object] = {
        "address": address,
        "addresses": addresses,
        "packetsSent": result.packets_sent,
        "packetsReceived": result.packets_received,
        "lossPercent": loss,
    }
    if result.packets_received:
        details |= {
            "minRttMs": result.min_rtt,
            "avgRttMs": result.avg_rtt,
            "maxRttMs": result.max_rtt,
        }
    if loss > max_loss_percent or not result.packets_received:
        return Outcome(
            ok=False,
            response_time_ms=result.avg_rtt if result.packets_received else None,
            error_kind=ErrorKind.PACKET_LOSS,
            error=f"{loss:g}% packet loss ({result.packets_received} of "
            f"{result.packets_sent} replies), over the {max_loss_percent:g}% allowed",
            timings=timings,
            details=details,
        )
    return Outcome(ok=True, response_time_ms=result.avg_rtt, timings=timings, details=details)


def _unavailable(clock: CheckClock, message: str) -> Outcome:
    return Outcome(
        ok=False,
        response_time_ms=None,
        error_kind=ErrorKind.ICMP_UNAVAILABLE,
        error=message,
        timings=clock.timings(),
    )


class PingProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.host is not None
        settings = spec.settings
        return await probe_ping(
            spec.host,
            int(settings.get("packetCount") or DEFAULT_PACKET_COUNT),
            float(settings.get("maxLossPercent") or 0),
            spec.timeout_seconds,
            kit.guard,
        )


class PingConfig(Input):
    host: Host
    packetCount: Annotated[int, Field(ge=1, le=10)] | None = DEFAULT_PACKET_COUNT
    maxLossPercent: Annotated[float, Field(ge=0, lt=100)] | None = 0  # 100 could never be down


KIND = MonitorKind(
    name="ping",
    label=N_("Ping (ICMP)"),
    rank=6,
    config=PingConfig,
    probe=PingProbe(),
    form=(
        FormField("host", N_("Host")),
        FormField("packetCount", N_("Packets"), "number", hint="1 to 10; default 3"),
        FormField("maxLossPercent", N_("Most packet loss (%)"), "number", hint="Default: 0"),
    ),
)
