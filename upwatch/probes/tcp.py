"""TCP probe: the port accepts a connection, which is then closed at once."""

from __future__ import annotations

import asyncio
import contextlib
import time

from upwatch.kit.net import NetworkGuard, ResolutionFailed, TargetRefused
from upwatch.probes.outcome import ErrorKind, Outcome, Timings


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _connect_message(error: OSError) -> str:
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    return error.strerror or str(error) or type(error).__name__


async def _connect_any(addresses: list[str], port: int) -> str:
    """Connect to the first address that accepts, in resolver order; returns that address.

    Sequential on purpose: a probe wants one clear answer, not the fastest of a race.
    """
    last_error: OSError | None = None
    for address in addresses:
        try:
            _reader, writer = await asyncio.open_connection(address, port)
        except OSError as exc:
            last_error = exc
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return address
    assert last_error is not None  # the guard never returns an empty list
    raise last_error


async def probe_tcp(host: str, port: int, timeout_seconds: float, guard: NetworkGuard) -> Outcome:
    """Resolve ``host`` through ``guard`` and open (then close) a TCP connection to ``port``."""
    started = time.perf_counter()
    dns_ms: float | None = None
    connect_started: float | None = None

    def failed(kind: ErrorKind, message: str) -> Outcome:
        timings = Timings(
            dns_ms=dns_ms,
            connect_ms=None if connect_started is None else _ms_since(connect_started),
            total_ms=_ms_since(started),
        )
        return Outcome(
            ok=False, response_time_ms=None, error_kind=kind, error=message, timings=timings
        )

    try:
        async with asyncio.timeout(timeout_seconds):
            addresses = await guard.resolve(host, port)
            dns_ms = _ms_since(started)
            connect_started = time.perf_counter()
            address = await _connect_any(addresses, port)
    except TargetRefused as exc:
        return failed(ErrorKind.REFUSED_TARGET, f"refused target: {exc}")
    except ResolutionFailed as exc:
        return failed(ErrorKind.DNS, f"DNS lookup failed: {exc}")
    except TimeoutError:
        return failed(ErrorKind.TIMEOUT, f"no connection within {timeout_seconds:g}s")
    except OSError as exc:
        return failed(ErrorKind.CONNECT, f"cannot connect: {_connect_message(exc)}")

    connect_ms = _ms_since(connect_started)
    total_ms = _ms_since(started)
    return Outcome(
        ok=True,
        response_time_ms=total_ms,
        timings=Timings(dns_ms=dns_ms, connect_ms=connect_ms, total_ms=total_ms),
        details={"address": address, "addresses": addresses},
    )
