"""The HTTP probe reports the certificate an https response came over, like the TLS probe."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
import trustme
from aiohttp import web

from upwatch.kit.net import PeerResponse
from upwatch.probes.http import HttpCheck, probe_http
from upwatch.probes.tls import down_below as tls_down_below

Serve = Callable[[datetime], Awaitable[int]]


async def hello(request: web.Request) -> web.Response:
    request.app[PEERS].append(
        request.transport.get_extra_info("peername") if request.transport else None
    )
    return web.Response(text="hello")


async def goodbye(_request: web.Request) -> web.Response:
    return web.Response(text="bye", headers={"Connection": "close"})


PEERS = web.AppKey("peers", list[object])


@pytest.fixture
def peers() -> list[object]:
    """The client address of each request the https servers answered."""
    return []


@pytest.fixture
async def serve(ca: trustme.CA, peers: list[object]) -> AsyncIterator[Serve]:
    """An https server on 127.0.0.1 whose certificate expires at the given moment."""
    runners: list[web.AppRunner] = []

    async def start(not_after: datetime) -> int:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", not_after=not_after).configure_cert(context)
        app = web.Application()
        app[PEERS] = peers
        app.router.add_get("/", hello)
        app.router.add_get("/close", goodbye)
        runner = web.AppRunner(app, shutdown_timeout=1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        runners.append(runner)
        return int(runner.addresses[0][1])

    yield start
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def session(ca_file: str) -> AsyncIterator[aiohttp.ClientSession]:
    """A keep-alive session that trusts the test's authority."""
    trusting = ssl.create_default_context(cafile=ca_file)
    # As guarded_session makes it (its guard aside): the responses keep their certificate.
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=trusting), response_class=PeerResponse
    ) as client:
        yield client


async def test_an_https_check_reports_the_days_its_certificate_has_left(
    serve: Serve, session: aiohttp.ClientSession
) -> None:
    not_after = datetime.now(UTC) + timedelta(days=30, hours=1)
    port = await serve(not_after)

    outcome = await probe_http(HttpCheck(url=f"https://127.0.0.1:{port}/"), session)

    assert outcome.ok, outcome.error
    assert outcome.details["daysToExpiry"] == 30
    assert outcome.details["notAfter"] == not_after.strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_a_check_on_a_reused_connection_still_reports_the_certificate(
    serve: Serve, session: aiohttp.ClientSession, peers: list[object]
) -> None:
    port = await serve(datetime.now(UTC) + timedelta(days=30, hours=1))
    check = HttpCheck(url=f"https://127.0.0.1:{port}/")

    first = await probe_http(check, session)
    second = await probe_http(check, session)

    # The second request came over the pooled connection (the same client address).
    [one, other] = peers
    assert one == other
    assert first.details["daysToExpiry"] == second.details["daysToExpiry"] == 30


async def test_a_server_that_closes_the_connection_still_shows_its_certificate(
    serve: Serve, session: aiohttp.ClientSession
) -> None:
    port = await serve(datetime.now(UTC) + timedelta(days=30, hours=1))

    outcome = await probe_http(HttpCheck(url=f"https://127.0.0.1:{port}/close"), session)

    assert outcome.ok, outcome.error
    assert outcome.details["daysToExpiry"] == 30


async def test_a_plain_http_check_reports_no_certificate(
    session: aiohttp.ClientSession,
) -> None:
    app = web.Application()
    app[PEERS] = []
    app.router.add_get("/", hello)
    runner = web.AppRunner(app, shutdown_timeout=1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        port = runner.addresses[0][1]
        outcome = await probe_http(HttpCheck(url=f"http://127.0.0.1:{port}/"), session)
    finally:
        await runner.cleanup()

    assert outcome.ok, outcome.error
    assert "daysToExpiry" not in outcome.details


async def test_an_unverified_https_check_reports_no_certificate(serve: Serve) -> None:
    port = await serve(datetime.now(UTC) + timedelta(days=30))
    async with aiohttp.ClientSession() as untrusting:
        outcome = await probe_http(
            HttpCheck(url=f"https://127.0.0.1:{port}/", verify_tls=False), untrusting
        )

    assert outcome.ok, outcome.error
    assert "daysToExpiry" not in outcome.details


@pytest.mark.parametrize(
    ("warning_days", "down_below"), [((), 14), ((30, 7), 30), ((3,), 3), ((1, 5, 2), 5)]
)
def test_a_tls_monitor_is_down_below_the_largest_of_its_warning_days(
    warning_days: tuple[int, ...], down_below: int
) -> None:
    assert tls_down_below(warning_days) == down_below
