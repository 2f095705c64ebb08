"""The WebSocket probe against real aiohttp WebSocket servers on loopback, plain and over TLS."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
import trustme
from aiohttp import web

from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.probes.outcome import ErrorKind
from upwatch.probes.websocket import WebSocketCheck, probe_websocket

LENIENT = NetworkGuard(allow_private=True)
STRICT = NetworkGuard(allow_private=False)

Serve = Callable[..., Awaitable[int]]


async def _echo(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    async for message in ws:
        if message.type is aiohttp.WSMsgType.TEXT:
            await ws.send_str(message.data)
    return ws


async def _other(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    async for message in ws:
        if message.type is aiohttp.WSMsgType.TEXT:
            await ws.send_str("something else entirely")
    return ws


async def _silent(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    async for _message in ws:
        pass  # reads, never answers
    return ws


async def _hangs_up(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    await ws.close(code=1011)
    return ws


async def _replies_then_never_closes(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse(autoclose=False)
    await ws.prepare(request)
    await ws.receive()
    await ws.send_str("pong")
    await asyncio.Event().wait()  # never answers the client's close frame
    return ws


async def _plain_page(_request: web.Request) -> web.Response:
    return web.Response(status=404, text="no socket here")


@pytest.fixture
async def serve(ca: trustme.CA) -> AsyncIterator[Serve]:
    """Start a WebSocket server on 127.0.0.1 (``/echo``, ``/other``, ``/silent``, ``/bye``,
    ``/page``), over TLS with a certificate from the test CA when asked."""
    runners: list[web.AppRunner] = []

    async def start(*, tls: bool = False, not_after: datetime | None = None) -> int:
        app = web.Application()
        app.router.add_get("/echo", _echo)
        app.router.add_get("/other", _other)
        app.router.add_get("/silent", _silent)
        app.router.add_get("/bye", _hangs_up)
        app.router.add_get("/page", _plain_page)
        app.router.add_get("/deaf", _replies_then_never_closes)
        runner = web.AppRunner(app, shutdown_timeout=0.5)
        await runner.setup()
        runners.append(runner)
        context: ssl.SSLContext | None = None
        if tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ca.issue_cert("localhost", "127.0.0.1", not_after=not_after).configure_cert(context)
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.Server)
        return int(server.sockets[0].getsockname()[1])

    yield start
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    made = guarded_session(LENIENT)
    yield made
    await made.close()


async def test_an_echo_server_answering_the_expected_reply_is_up(
    serve: Serve, session: aiohttp.ClientSession
) -> None:
    port = await serve()
    check = WebSocketCheck(f"ws://127.0.0.1:{port}/echo", message="ping", expect_reply="^ping$")

    outcome = await probe_websocket(check, session)

    assert outcome.ok, outcome.error
    assert outcome.status_code == 101
    assert outcome.timings is not None
    assert outcome.timings.first_byte_ms is not None


async def test_an_open_handshake_alone_is_up_when_no_reply_is_expected(
    serve: Serve, session: aiohttp.ClientSession
) -> None:
    port = await serve()

    outcome = await probe_websocket(WebSocketCheck(f"ws://127.0.0.1:{port}/silent"), session)

    assert outcome.ok, outcome.error


async def test_a_reply_that_does_not_match_is_down_quoting_the_reply(
    serve: Serve, session: aiohttp.ClientSession
) -> None:
    port = await serve()
    check = WebSocketCheck(f"ws://127.0.0.1:{port}/other", message="ping", expect_reply="pong")

    outcome = await probe_websocket(check, session)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.UNEXPECTED_REPLY
    assert "something else entirely" in (outcome.error or "")


async def test_no_reply_in_time_is_down_with_a_timeout(
    serve: Serve, session: aiohttp.ClientSession
) -> None:
    port = await serve()
    check = WebSocketCheck(
        f"ws://127.0.0.1:{port}/silent", message="ping", expect_reply="pong", timeout_seconds=1
    )

    outcome = await probe_websocket(check, session)

    assert outcome.error_kind is ErrorKind.TIMEOUT
    assert outcome.error == "no reply within 1s"


async def test_a_server_closing_instead_of_replying_is_down_with_the_close_code(
    serve: Serve, session: aiohttp.ClientSession
) -> None:
    port = await serve()
    check = WebSocketCheck(f"ws://127.0.0.1:{port}/bye", expect_reply="hello")

    outcome = await probe_websocket(check, session)

    assert outcome.error_kind is ErrorKind.UNEXPECTED_REPLY
    assert "close code 1011" in (outcome.error or "")


async def test_a_refused_handshake_is_down_with_its_http_status(
    serve: Serve, session: aiohttp.ClientSession
) -> None:
    port = await serve()

    outcome = await probe_websocket(WebSocketCheck(f"ws://127.0.0.1:{port}/page"), session)

    assert outcome.error_kind is ErrorKind.STATUS_CODE
    assert outcome.status_code == 404
    assert outcome.error == "handshake refused: expected HTTP 101, got 404"


async def test_a_stopped_server_is_down_with_a_connect_error(
    session: aiohttp.ClientSession,
) -> None:
    # A port that was free a moment ago: nothing listens there now.
    server = await asyncio.start_server(lambda _r, _w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()

    outcome = await probe_websocket(WebSocketCheck(f"ws://127.0.0.1:{port}/echo"), session)

    assert outcome.error_kind is ErrorKind.CONNECT
    assert outcome.error == "cannot connect: connection refused"


async def test_a_wss_server_reports_its_certificates_expiry(
    serve: Serve, session: aiohttp.ClientSession, ca_file: str
) -> None:
    not_after = datetime.now(UTC) + timedelta(days=40, hours=1)
    port = await serve(tls=True, not_after=not_after)
    check = WebSocketCheck(
        f"wss://localhost:{port}/echo", message="hi", expect_reply="hi", ca_file=ca_file
    )

    outcome = await probe_websocket(check, session)

    assert outcome.ok, outcome.error
    assert outcome.details["daysToExpiry"] == 40
    assert outcome.details["notAfter"] == not_after.strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_a_wss_certificate_from_an_unknown_authority_is_down_with_a_tls_error(
    serve: Serve, session: aiohttp.ClientSession
) -> None:
    port = await serve(tls=True)

    outcome = await probe_websocket(WebSocketCheck(f"wss://localhost:{port}/echo"), session)

    assert outcome.error_kind is ErrorKind.TLS
    assert (outcome.error or "").startswith("certificate verification failed")


async def test_the_guard_refuses_a_private_target_when_not_allowed(serve: Serve) -> None:
    port = await serve()
    strict = guarded_session(STRICT)
    try:
        outcome = await probe_websocket(WebSocketCheck(f"ws://127.0.0.1:{port}/echo"), strict)
    finally:
        await strict.close()

    assert outcome.error_kind is ErrorKind.REFUSED_TARGET
    assert "127.0.0.1 is not a public address (loopback)" in (outcome.error or "")


async def test_a_server_hanging_up_on_the_handshake_is_down_with_a_connect_error(
    open_port: int, session: aiohttp.ClientSession
) -> None:
    outcome = await probe_websocket(WebSocketCheck(f"ws://127.0.0.1:{open_port}/"), session)

    assert outcome.error_kind is ErrorKind.CONNECT
    assert outcome.error == "the server closed the connection during the handshake"


async def test_a_server_that_never_answers_the_handshake_is_down_with_a_timeout(
    session: aiohttp.ClientSession,
) -> None:
    async def listen_only(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    server = await asyncio.start_server(listen_only, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        check = WebSocketCheck(f"ws://127.0.0.1:{port}/", timeout_seconds=0.5)
        outcome = await probe_websocket(check, session)
    finally:
        server.close()
        await server.wait_closed()

    assert outcome.error_kind is ErrorKind.TIMEOUT
    assert outcome.error == "no WebSocket handshake within 0.5s"


async def test_a_reply_that_came_stands_when_only_the_closing_is_late(
    serve: Serve, session: aiohttp.ClientSession
) -> None:
    port = await serve()
    check = WebSocketCheck(
        f"ws://127.0.0.1:{port}/deaf", message="ping", expect_reply="pong", timeout_seconds=0.5
    )

    outcome = await probe_websocket(check, session)

    assert outcome.ok, outcome.error
