"""Every network probe times its phases alike, against real servers on this machine.

Targets are named ``localhost`` so that a real lookup happens and every phase has a time.
Rule: a phase is timed once it completed; ``total_ms`` is always there.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import AsyncIterator

import pytest
import trustme
from aiohttp import web

from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.probes.http import HttpCheck, probe_http
from upwatch.probes.outcome import Outcome, Timings
from upwatch.probes.tcp import probe_tcp
from upwatch.probes.tls import probe_tls

GUARD = NetworkGuard(allow_private=True)


@pytest.fixture
def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    return context


async def _serve(context: ssl.SSLContext | None) -> AsyncIterator[int]:
    async def ok(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", ok)
    runner = web.AppRunner(app, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    yield int(runner.addresses[0][1])
    await runner.cleanup()


@pytest.fixture
async def http_port() -> AsyncIterator[int]:
    async for port in _serve(None):
        yield port


@pytest.fixture
async def https_port(server_tls: ssl.SSLContext) -> AsyncIterator[int]:
    async for port in _serve(server_tls):
        yield port


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def timings_of(outcome: Outcome) -> Timings:
    assert outcome.timings is not None
    assert outcome.timings.total_ms is not None
    return outcome.timings


async def http(url: str) -> Outcome:
    async with guarded_session(GUARD) as client:
        return await probe_http(HttpCheck(url=url), client)


async def test_a_tcp_check_times_the_lookup_and_the_connect(http_port: int) -> None:
    outcome = await probe_tcp("localhost", http_port, 5, GUARD)

    timings = timings_of(outcome)
    assert outcome.ok
    assert timings.dns_ms is not None
    assert timings.connect_ms is not None
    assert timings.tls_ms is None
    assert timings.first_byte_ms is None
    assert outcome.response_time_ms == timings.total_ms


async def test_a_tls_check_times_the_lookup_the_connect_and_the_handshake(
    https_port: int, ca_file: str
) -> None:
    outcome = await probe_tls("localhost", https_port, 5, GUARD, ca_file=ca_file)

    timings = timings_of(outcome)
    assert outcome.ok, outcome.error
    assert timings.dns_ms is not None
    assert timings.connect_ms is not None
    assert timings.tls_ms is not None
    assert timings.first_byte_ms is None
    assert outcome.response_time_ms == timings.total_ms


async def test_an_http_check_times_the_lookup_the_connect_and_the_first_byte(
    http_port: int,
) -> None:
    outcome = await http(f"http://localhost:{http_port}/")

    timings = timings_of(outcome)
    assert outcome.ok, outcome.error
    assert timings.dns_ms is not None
    assert timings.connect_ms is not None
    assert timings.first_byte_ms is not None
    assert outcome.response_time_ms == timings.total_ms


@pytest.mark.parametrize("probe", ["tcp", "tls", "http"])
async def test_a_refused_connection_keeps_the_lookup_time_and_has_no_connect_time(
    probe: str,
) -> None:
    port = closed_port()
    match probe:
        case "tcp":
            outcome = await probe_tcp("localhost", port, 5, GUARD)
        case "tls":
            outcome = await probe_tls("localhost", port, 5, GUARD)
        case _:
            outcome = await http(f"http://localhost:{port}/")

    timings = timings_of(outcome)
    assert not outcome.ok
    assert outcome.error == "cannot connect: connection refused"
    assert timings.dns_ms is not None
    assert timings.connect_ms is None
    assert timings.tls_ms is None
