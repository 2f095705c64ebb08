"""Which probe checks which monitor type: one entry per type, looked up by the engine."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from upwatch.probes.dns import DnsProbe
from upwatch.probes.heartbeat import HeartbeatProbe
from upwatch.probes.http import HttpProbe
from upwatch.probes.probe import Probe
from upwatch.probes.tcp import TcpProbe
from upwatch.probes.tls import TlsProbe

PROBES: Mapping[str, Probe] = MappingProxyType(
    {
        "http": HttpProbe(),
        "tcp": TcpProbe(),
        "dns": DnsProbe(),
        "tls": TlsProbe(),
        "heartbeat": HeartbeatProbe(),
    }
)


class UnknownMonitorType(ValueError):
    """No probe is registered for the type: a monitor row the code does not know."""


def probe_for(monitor_type: str) -> Probe:
    try:
        return PROBES[monitor_type]
    except KeyError:
        raise UnknownMonitorType(f"unknown monitor type {monitor_type!r}") from None
