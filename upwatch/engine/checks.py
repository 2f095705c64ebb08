"""Running one check: the monitor's type picks the probe."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import aiohttp

from upwatch.engine.targets import MonitorSpec
from upwatch.kit.net import NetworkGuard
from upwatch.probes.dns import probe_dns
from upwatch.probes.heartbeat import heartbeat_outcome
from upwatch.probes.http import HttpCheck, probe_http
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.tcp import probe_tcp
from upwatch.probes.tls import probe_tls

# A heartbeat may arrive this long after its interval before the monitor counts as down.
HEARTBEAT_GRACE_SECONDS = 60


@dataclass
class ProbeKit:
    """What probes share: the guard and one keep-alive HTTP session (made in the lifespan)."""

    guard: NetworkGuard
    http: aiohttp.ClientSession


async def run_check(spec: MonitorSpec, kit: ProbeKit, now: datetime) -> Outcome:
    if spec.type == "http":
        assert spec.url is not None
        check = HttpCheck(
            url=spec.url,
            method=spec.method,
            headers=dict(spec.headers),
            body=spec.body,
            expected_status_codes=spec.expected_status_codes,
            keyword=spec.keyword,
            timeout_seconds=spec.timeout_seconds,
        )
        return await probe_http(check, kit.http)
    if spec.type == "tcp":
        assert spec.host is not None
        assert spec.port is not None
        return await probe_tcp(spec.host, spec.port, spec.timeout_seconds, kit.guard)
    if spec.type == "dns":
        assert spec.host is not None
        if kit.guard.loopback_only:
            # A DNS check queries the system resolvers, which are not on this machine.
            return Outcome(
                ok=False,
                response_time_ms=None,
                error_kind=ErrorKind.REFUSED_TARGET,
                error="DNS checks are off where only loopback targets are reached",
            )
        return await probe_dns(
            spec.host, spec.record_type or "A", spec.expected_value, spec.timeout_seconds
        )
    if spec.type == "tls":
        assert spec.host is not None
        return await probe_tls(spec.host, spec.port or 443, spec.timeout_seconds, kit.guard)
    if spec.type == "heartbeat":
        return heartbeat_outcome(
            spec.last_ping_at,
            spec.created_at,
            now,
            spec.interval_seconds,
            HEARTBEAT_GRACE_SECONDS,
        )
    raise ValueError(f"unknown monitor type {spec.type!r}")
