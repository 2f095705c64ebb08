"""TLS probe: the certificate of ``host:port`` verifies, and how many days it has left."""

from __future__ import annotations

import asyncio
import functools
import math
import ssl
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from upwatch.kit.inputs import Input
from upwatch.kit.languages import N_
from upwatch.kit.net import NetworkGuard
from upwatch.probes import evidence
from upwatch.probes.connect import CONNECT_ERRORS, CheckClock, Stream, connect, failed
from upwatch.probes.fields import Host, Port
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec

_SECONDS_PER_DAY = 86_400
# Days before expiry that warn, unless a monitor sets its own (`certificateWarningDays`).
DEFAULT_WARNING_DAYS = (14, 7, 1)
DEFAULT_PORT = 443


def certificate_expiry(peercert: dict[str, object]) -> tuple[int, str]:
    """Whole days left (negative once expired) and ``notAfter`` as ISO 8601 UTC, from a
    verified peer's ``getpeercert()``."""
    not_after, iso = _not_after(str(peercert["notAfter"]))
    return math.floor((not_after - time.time()) / _SECONDS_PER_DAY), iso


@functools.lru_cache(maxsize=4096)
def _not_after(text: str) -> tuple[float, str]:
    """Parsed once per certificate: an https check reads it on every response, and parsing
    the date (``strptime``) is most of that cost."""
    moment = ssl.cert_time_to_seconds(text)
    return moment, datetime.fromtimestamp(moment, UTC).isoformat().replace("+00:00", "Z")


async def probe_tls(
    host: str,
    port: int,
    timeout_seconds: float,
    guard: NetworkGuard,
    warn_days: int = 14,
    ca_file: str | None = None,
) -> Outcome:
    """Handshake with full verification (chain and hostname) and report the expiry.

    ``ca_file`` replaces the system trust store (tests trust their own CA with it). A
    certificate that verifies but has fewer than ``warn_days`` whole days left fails with
    ``CERTIFICATE_EXPIRY``. Timings are separate for DNS, TCP connect and the TLS handshake.
    """
    context = ssl.create_default_context(cafile=ca_file)
    server_name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    clock = CheckClock()
    stream: Stream | None = None
    try:
        async with asyncio.timeout(timeout_seconds):
            stream = await connect(server_name, port, guard, clock)
            # Plain TCP first, then TLS on it, so the handshake is timed on its own.
            await stream.writer.start_tls(context, server_hostname=server_name)
            clock.secured()
            timings = clock.timings()
            peercert = stream.writer.get_extra_info("peercert")
            ssl_object = stream.writer.get_extra_info("ssl_object")
    except CONNECT_ERRORS as exc:
        return failed(exc, clock, "TLS handshake", timeout_seconds)
    finally:
        if stream is not None:
            await stream.close()

    days, not_after = certificate_expiry(peercert)
    details: dict[str, object] = {
        "daysToExpiry": days,
        "notAfter": not_after,
        "tlsVersion": ssl_object.version() if isinstance(ssl_object, ssl.SSLObject) else None,
    }
    if days < warn_days:
        return Outcome(
            ok=False,
            response_time_ms=timings.total_ms,
            error_kind=ErrorKind.CERTIFICATE_EXPIRY,
            error=f"certificate expires in {days} days ({not_after}), under {warn_days}",
            timings=timings,
            details=details,
            evidence=evidence.build(
                "tls", addresses=stream.addresses, tls=evidence.certificate(peercert)
            ),
        )
    return Outcome(ok=True, response_time_ms=timings.total_ms, timings=timings, details=details)


class TlsProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.host is not None
        return await probe_tls(
            spec.host,
            spec.port or DEFAULT_PORT,
            spec.timeout_seconds,
            kit.guard,
            warn_days=down_below(spec.certificate_warning_days),
        )


def down_below(warning_days: Sequence[int]) -> int:
    """Days left under which a TLS monitor is down: the largest of its warning days (14 by
    default, as before they could be set), so it turns down with the first warning."""
    return max(warning_days or DEFAULT_WARNING_DAYS)


class TlsConfig(Input):
    host: Host
    port: Port | None = DEFAULT_PORT


KIND = MonitorKind(
    name="tls",
    label=N_("TLS certificate"),
    rank=4,
    config=TlsConfig,
    probe=TlsProbe(),
    form=(
        FormField("host", N_("Host")),
        FormField("port", N_("Port"), "number", hint="Default: 443"),
    ),
    speaks_tls=True,
)
