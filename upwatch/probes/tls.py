"""TLS probe: the certificate of ``host:port`` verifies, and how many days it has left."""

from __future__ import annotations

import asyncio
import math
import ssl
import time
from datetime import UTC, datetime

from upwatch.kit.net import NetworkGuard, ResolutionFailed, TargetRefused
from upwatch.probes.outcome import ErrorKind, Outcome, Timings

_SECONDS_PER_DAY = 86_400
# Closing politely (TLS close_notify) must not hold a probe slot for long.
_CLOSE_SECONDS = 2.0


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _connect_message(error: OSError) -> str:
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    return error.strerror or str(error) or type(error).__name__


async def _open_any(
    addresses: list[str], port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Plain TCP to the first address that accepts; TLS starts separately to time it."""
    last_error: OSError | None = None
    for address in addresses:
        try:
            return await asyncio.open_connection(address, port)
        except OSError as exc:
            last_error = exc
    assert last_error is not None  # the guard never returns an empty list
    raise last_error


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    try:
        async with asyncio.timeout(_CLOSE_SECONDS):
            await writer.wait_closed()
    except (TimeoutError, OSError, ssl.SSLError):
        writer.transport.abort()


def _expiry(peercert: dict[str, object]) -> tuple[int, str]:
    """Whole days left (negative once expired) and ``notAfter`` as ISO 8601 UTC."""
    not_after = ssl.cert_time_to_seconds(str(peercert["notAfter"]))
    days = math.floor((not_after - time.time()) / _SECONDS_PER_DAY)
    iso = datetime.fromtimestamp(not_after, UTC).isoformat().replace("+00:00", "Z")
    return days, iso


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
    started = time.perf_counter()
    dns_ms: float | None = None
    connect_ms: float | None = None
    tls_ms: float | None = None
    phase_started = started
    writer: asyncio.StreamWriter | None = None

    def timings() -> Timings:
        return Timings(
            dns_ms=dns_ms, connect_ms=connect_ms, tls_ms=tls_ms, total_ms=_ms_since(started)
        )

    def failed(kind: ErrorKind, message: str) -> Outcome:
        return Outcome(
            ok=False, response_time_ms=None, error_kind=kind, error=message, timings=timings()
        )

    try:
        async with asyncio.timeout(timeout_seconds):
            addresses = await guard.resolve(server_name, port)
            dns_ms = _ms_since(phase_started)
            phase_started = time.perf_counter()
            try:
                _reader, writer = await _open_any(addresses, port)
            except OSError as exc:
                return failed(ErrorKind.CONNECT, f"cannot connect: {_connect_message(exc)}")
            connect_ms = _ms_since(phase_started)
            phase_started = time.perf_counter()
            await writer.start_tls(context, server_hostname=server_name)
            tls_ms = _ms_since(phase_started)
            peercert = writer.get_extra_info("peercert")
            ssl_object = writer.get_extra_info("ssl_object")
    except TargetRefused as exc:
        return failed(ErrorKind.REFUSED_TARGET, f"refused target: {exc}")
    except ResolutionFailed as exc:
        return failed(ErrorKind.DNS, f"DNS lookup failed: {exc}")
    except TimeoutError:
        return failed(ErrorKind.TIMEOUT, f"no TLS handshake within {timeout_seconds:g}s")
    except ssl.SSLCertVerificationError as exc:
        reason = exc.verify_message or str(exc)
        return failed(ErrorKind.TLS, f"certificate verification failed: {reason}")
    except (ssl.SSLError, OSError) as exc:
        # Also a peer that hangs up mid-handshake, as plain-TCP services on the port do.
        return failed(ErrorKind.TLS, f"TLS handshake failed: {exc}")
    finally:
        if writer is not None:
            await _close(writer)

    days, not_after = _expiry(peercert)
    details: dict[str, object] = {
        "daysToExpiry": days,
        "notAfter": not_after,
        "tlsVersion": ssl_object.version() if isinstance(ssl_object, ssl.SSLObject) else None,
    }
    elapsed = timings()
    if days < warn_days:
        return Outcome(
            ok=False,
            response_time_ms=elapsed.total_ms,
            error_kind=ErrorKind.CERTIFICATE_EXPIRY,
            error=f"certificate expires in {days} days ({not_after}), under {warn_days}",
            timings=elapsed,
            details=details,
        )
    return Outcome(ok=True, response_time_ms=elapsed.total_ms, timings=elapsed, details=details)
