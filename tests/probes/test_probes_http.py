"""The HTTP probe against a real aiohttp server on loopback, through a guarded session."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import trustme
from aiohttp import web

from upwatch.kit.net import IPAddress, NetworkGuard, guarded_session
from upwatch.probes.http import HttpCheck, probe_http
from upwatch.probes.outcome import ErrorKind, Outcome

BIG_BODY = b"x" * (2 * 1024 * 1024)
LOOPBACK = ipaddress.ip_address("127.0.0.1")


@dataclass
class Target:
    url: str
    port: int


class LoopbackIsPublic(NetworkGuard):
    """Strict, except that 127.0.0.1 plays a public address, as the test server's stand-in."""

    def __init__(self) -> None:
        super().__init__(allow_private=False)

    def permits(self, address: IPAddress) -> bool:
        return address == LOOPBACK or super().permits(address)


def target_app(release: asyncio.Event) -> web.Application:
    async def ok(_request: web.Request) -> web.Response:
        return web.Response(text="<html>all systems operational</html>")

    async def status(request: web.Request) -> web.Response:
        return web.Response(status=int(request.match_info["code"]), text="status")

    async def slow(_request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(text="late")

    async def loop(_request: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    async def hops(request: web.Request) -> web.Response:
        left = int(request.match_info["left"])
        if left == 0:
            return web.Response(text="arrived")
        raise web.HTTPFound(f"/hops/{left - 1}")

    async def big(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        for start in range(0, len(BIG_BODY), 64 * 1024):
            await response.write(BIG_BODY[start : start + 64 * 1024])
        await response.write_eof()
        return response

    async def away(request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["to"])

    async def echo(request: web.Request) -> web.Response:
        body = await request.text()
        return web.Response(text=f"{request.method} {request.headers.get('X-Probe')} {body}")

    app = web.Application()
    app.router.add_get("/ok", ok)
    app.router.add_get("/status/{code}", status)
    app.router.add_get("/slow", slow)
    app.router.add_get("/loop", loop)
    app.router.add_get("/hops/{left}", hops)
    app.router.add_get("/big", big)
    app.router.add_get("/away", away)
    app.router.add_route("*", "/echo", echo)
    return app


async def serve(
    app: web.Application, ssl_context: ssl.SSLContext | None = None
) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    return runner, runner.addresses[0][1]


@pytest.fixture
async def target() -> AsyncIterator[Target]:
    release = asyncio.Event()
    runner, port = await serve(target_app(release))
    yield Target(url=f"http://127.0.0.1:{port}", port=port)
    release.set()
    await runner.cleanup()


@pytest.fixture
def dns_table(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Names under ``.test`` resolve from this table only; nothing leaves the machine."""
    table: dict[str, str] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        if host.endswith(".test"):
            if host not in table:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (table[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


async def check(guard: NetworkGuard, http_check: HttpCheck) -> Outcome:
    async with guarded_session(guard) as client:
        return await probe_http(http_check, client)


def assert_refused(outcome: Outcome, address: str) -> None:
    """The check was refused before it connected, and says which address it refused."""
    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.REFUSED_TARGET
    assert outcome.error is not None
    assert address in outcome.error


async def test_a_page_answering_200_is_up_with_its_status_and_timings(target: Target) -> None:
    outcome = await check(NetworkGuard(allow_private=True), HttpCheck(url=f"{target.url}/ok"))

    assert outcome.ok
    assert outcome.status_code == 200
    assert outcome.error_kind is None
    assert outcome.response_time_ms is not None
    assert outcome.timings is not None
    assert outcome.timings.connect_ms is not None
    assert outcome.timings.first_byte_ms is not None
    assert outcome.timings.total_ms is not None


async def test_a_name_is_timed_from_its_lookup(target: Target, dns_table: dict[str, str]) -> None:
    dns_table["status.upwatch.test"] = "127.0.0.1"
    url = f"http://status.upwatch.test:{target.port}/ok"

    outcome = await check(NetworkGuard(allow_private=True), HttpCheck(url=url))

    assert outcome.ok
    assert outcome.timings is not None
    assert outcome.timings.dns_ms is not None


async def test_an_unexpected_status_is_down_and_says_what_was_expected(target: Target) -> None:
    outcome = await check(
        NetworkGuard(allow_private=True), HttpCheck(url=f"{target.url}/status/503")
    )

    assert not outcome.ok
    assert outcome.status_code == 503
    assert outcome.error_kind is ErrorKind.STATUS_CODE
    assert outcome.error == "expected 200-399, got 503"
    assert outcome.response_time_ms is not None


async def test_explicit_expected_codes_replace_the_default_range(target: Target) -> None:
    guard = NetworkGuard(allow_private=True)
    codes = (*range(200, 300), 404)

    missing = await check(
        guard, HttpCheck(url=f"{target.url}/status/404", expected_status_codes=codes)
    )
    moved = await check(
        guard, HttpCheck(url=f"{target.url}/status/304", expected_status_codes=codes)
    )

    assert missing.ok
    assert not moved.ok
    assert moved.error == "expected 200-299, 404, got 304"


async def test_a_present_keyword_keeps_the_check_up(target: Target) -> None:
    outcome = await check(
        NetworkGuard(allow_private=True), HttpCheck(url=f"{target.url}/ok", keyword="operational")
    )

    assert outcome.ok


async def test_an_absent_keyword_is_down_with_the_keyword_kind(target: Target) -> None:
    outcome = await check(
        NetworkGuard(allow_private=True), HttpCheck(url=f"{target.url}/ok", keyword="maintenance")
    )

    assert not outcome.ok
    assert outcome.status_code == 200
    assert outcome.error_kind is ErrorKind.KEYWORD
    assert outcome.error is not None
    assert "maintenance" in outcome.error


async def test_method_headers_and_body_are_sent_as_configured(target: Target) -> None:
    outcome = await check(
        NetworkGuard(allow_private=True),
        HttpCheck(
            url=f"{target.url}/echo",
            method="post",
            headers={"X-Probe": "upwatch"},
            body="ping",
            keyword="POST upwatch ping",
        ),
    )

    assert outcome.ok


async def test_a_response_slower_than_the_timeout_is_a_timeout(target: Target) -> None:
    outcome = await check(
        NetworkGuard(allow_private=True), HttpCheck(url=f"{target.url}/slow", timeout_seconds=0.3)
    )

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.TIMEOUT
    assert outcome.status_code is None


async def test_a_redirect_loop_stops_at_the_redirect_limit(target: Target) -> None:
    outcome = await check(
        NetworkGuard(allow_private=True), HttpCheck(url=f"{target.url}/loop", max_redirects=3)
    )

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.TOO_MANY_REDIRECTS
    assert outcome.error == "more than 3 redirects"


async def test_redirects_within_the_limit_are_followed(target: Target) -> None:
    outcome = await check(
        NetworkGuard(allow_private=True), HttpCheck(url=f"{target.url}/hops/3", max_redirects=3)
    )

    assert outcome.ok
    assert outcome.details["redirects"] == 3


async def test_a_body_over_the_cap_without_the_keyword_is_too_large(target: Target) -> None:
    outcome = await check(
        NetworkGuard(allow_private=True),
        HttpCheck(url=f"{target.url}/big", keyword="needle", max_body_bytes=1_000_000),
    )

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.RESPONSE_TOO_LARGE
    assert outcome.status_code == 200


async def test_a_body_over_the_cap_is_fine_when_no_keyword_is_wanted(target: Target) -> None:
    outcome = await check(
        NetworkGuard(allow_private=True), HttpCheck(url=f"{target.url}/big", max_body_bytes=1000)
    )

    assert outcome.ok


async def test_a_loopback_target_is_refused_when_private_targets_are_not_allowed(
    target: Target,
) -> None:
    outcome = await check(NetworkGuard(allow_private=False), HttpCheck(url=f"{target.url}/ok"))

    assert_refused(outcome, "127.0.0.1")


async def test_a_redirect_to_an_internal_address_is_refused(target: Target) -> None:
    internal = f"http://127.0.0.2:{target.port}/ok"

    outcome = await check(LoopbackIsPublic(), HttpCheck(url=f"{target.url}/away?to={internal}"))

    assert_refused(outcome, "127.0.0.2")


async def test_a_redirect_to_a_name_of_an_internal_address_is_refused(
    target: Target, dns_table: dict[str, str]
) -> None:
    dns_table["intranet.upwatch.test"] = "10.0.0.5"
    internal = f"http://intranet.upwatch.test:{target.port}/ok"

    outcome = await check(LoopbackIsPublic(), HttpCheck(url=f"{target.url}/away?to={internal}"))

    assert_refused(outcome, "10.0.0.5")


async def test_the_stand_in_public_target_itself_is_reachable(target: Target) -> None:
    outcome = await check(LoopbackIsPublic(), HttpCheck(url=f"{target.url}/ok"))

    assert outcome.ok


async def test_a_name_that_does_not_resolve_is_a_dns_failure(dns_table: dict[str, str]) -> None:
    outcome = await check(
        NetworkGuard(allow_private=False), HttpCheck(url="http://missing.upwatch.test/")
    )

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.DNS


async def test_a_closed_port_is_a_connect_failure() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    outcome = await check(
        NetworkGuard(allow_private=True), HttpCheck(url=f"http://127.0.0.1:{port}/")
    )

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.CONNECT
    assert outcome.error == "cannot connect: connection refused"


async def test_an_untrusted_certificate_is_a_tls_failure_unless_verification_is_off() -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    runner, port = await serve(target_app(asyncio.Event()), server_context)
    guard = NetworkGuard(allow_private=True)
    try:
        verified = await check(guard, HttpCheck(url=f"https://127.0.0.1:{port}/ok"))
        unverified = await check(
            guard, HttpCheck(url=f"https://127.0.0.1:{port}/ok", verify_tls=False)
        )
    finally:
        await runner.cleanup()

    assert verified.error_kind is ErrorKind.TLS
    assert verified.error is not None
    assert "certificate verification failed" in verified.error
    assert unverified.ok


async def test_one_session_serves_many_checks_with_kept_alive_connections(
    target: Target,
) -> None:
    async with guarded_session(NetworkGuard(allow_private=True)) as client:
        outcomes = [await probe_http(HttpCheck(url=f"{target.url}/ok"), client) for _ in range(3)]

    assert all(outcome.ok for outcome in outcomes)
    last = outcomes[-1].timings
    assert last is not None
    assert last.connect_ms is None
