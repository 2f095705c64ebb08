"""Failure evidence: what a failing check saw, bounded and redacted, from the probes on real
loopback servers, and passing checks keep none."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import trustme
from aiohttp import web

from upwatch.engine.broker import CheckReport
from upwatch.engine.wire import Malformed, decode_report, encode_report
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.probes import evidence
from upwatch.probes.http import HttpCheck, probe_http
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.tcp import probe_tcp
from upwatch.probes.tls import probe_tls

LENIENT = NetworkGuard(allow_private=True)
TOKEN = "s3cr3t-bearer-token-value"
MARKER = "evidence-marker-7f3a"


# ---- building, redacting, bounding ---------------------------------------------------------


def test_a_body_is_cut_at_4_kb_and_says_there_was_more() -> None:
    seen = evidence.build("body", body=b"a" * 10_000)

    assert seen["body"] == "a" * evidence.BODY_BYTES
    assert seen["bodyTruncated"] is True


def test_a_short_body_is_kept_whole_and_invalid_bytes_do_not_stop_it() -> None:
    seen = evidence.build("body", body=b"bad \xff byte")

    assert seen["body"] == "bad \ufffd byte"
    assert seen["bodyTruncated"] is False


def test_credential_headers_are_masked_whole_whatever_their_letter_case() -> None:
    seen = evidence.build(
        "first_byte",
        headers=[
            ("Set-Cookie", "session=abc123"),
            ("AUTHORIZATION", "Basic dXNlcjpwYXNz"),
            ("X-Session-Id", "42-42-42"),
            ("Content-Type", "text/plain"),
        ],
    )

    assert seen["headers"] == [
        ["Set-Cookie", evidence.MASK],
        ["AUTHORIZATION", evidence.MASK],
        ["X-Session-Id", evidence.MASK],
        ["Content-Type", "text/plain"],
    ]


def test_a_request_header_value_echoed_in_a_response_header_or_body_never_appears() -> None:
    secrets = evidence.secret_values([("X-Api-Key", TOKEN), ("Accept", "*/*")], "url-password")

    seen = evidence.build(
        "first_byte",
        headers=[("X-Echo", f"got {TOKEN}"), ("X-Other", "url-password")],
        body=f"you sent {TOKEN} and url-password".encode(),
        secrets=secrets,
    )

    text = json.dumps(seen)
    assert TOKEN not in text
    assert "url-password" not in text
    assert seen["headers"] == [["X-Echo", f"got {evidence.MASK}"], ["X-Other", evidence.MASK]]
    assert seen["body"] == f"you sent {evidence.MASK} and {evidence.MASK}"


def test_the_whole_evidence_is_cut_to_its_limit_body_first_then_headers() -> None:
    many = [(f"X-Header-{n}", "v" * 400) for n in range(40)]

    seen = evidence.build("first_byte", headers=many, body=b"b" * 4000, addresses=["192.0.2.1"])

    assert len(json.dumps(seen, separators=(",", ":")).encode()) <= evidence.LIMIT_BYTES
    assert seen["truncated"] is True
    assert seen["body"] == ""
    assert 0 < len(seen["headers"]) < 40
    assert seen["addresses"] == ["192.0.2.1"]


def test_evidence_that_fits_is_not_marked_truncated() -> None:
    seen = evidence.build("connect", error=ConnectionRefusedError(), addresses=["192.0.2.1"])

    assert seen == {
        "phase": "connect",
        "errorClass": "ConnectionRefusedError",
        "addresses": ["192.0.2.1"],
    }


def _report(outcome: Outcome) -> CheckReport:
    now = datetime.now(UTC)
    return CheckReport("m1", "r1", now.timestamp(), now.timestamp(), now, outcome)


def test_a_report_carries_evidence_through_the_wire_but_not_on_a_passing_check() -> None:
    failing = Outcome(ok=False, response_time_ms=None, evidence={"phase": "dns", "x": [1]})
    now = datetime.now(UTC).timestamp()

    assert decode_report(encode_report(_report(failing)), now).outcome.evidence == {
        "phase": "dns",
        "x": [1],
    }
    passing = Outcome(ok=True, response_time_ms=1.0, evidence={"phase": "dns"})
    with pytest.raises(Malformed):
        decode_report(encode_report(_report(passing)), now)
    oversized = Outcome(ok=False, response_time_ms=None, evidence={"body": "x" * 20_000})
    with pytest.raises(Malformed):
        decode_report(encode_report(_report(oversized)), now)


# ---- the probes ----------------------------------------------------------------------------


@pytest.fixture
async def broken_site() -> AsyncIterator[int]:
    """``/down`` answers 503 with a long marked body, a cookie and the request's key echoed;
    ``/short`` answers 503 with four bytes; ``/up`` answers 200."""

    async def down(request: web.Request) -> web.Response:
        response = web.Response(
            status=503,
            text=f"{MARKER} key={request.headers.get('X-Api-Key')} " + "z" * 6000,
        )
        response.headers["Set-Cookie"] = "session=cookie-secret-value"
        response.headers["X-Echoed-Key"] = request.headers.get("X-Api-Key", "")
        return response

    async def up(_request: web.Request) -> web.Response:
        return web.Response(text="fine")

    async def short(_request: web.Request) -> web.Response:
        return web.Response(status=503, text="down")

    app = web.Application()
    app.router.add_get("/down", down)
    app.router.add_get("/up", up)
    app.router.add_get("/short", short)
    runner = web.AppRunner(app, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield int(runner.addresses[0][1])
    await runner.cleanup()


@pytest.fixture
def evidence_name(monkeypatch: pytest.MonkeyPatch) -> str:
    """A name under ``.test`` that resolves to loopback here, nowhere else."""
    real = socket.getaddrinfo

    def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        if host == "site.evidence.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return "site.evidence.test"


async def _http(check: HttpCheck) -> Outcome:
    async with guarded_session(LENIENT) as session:
        return await probe_http(check, session)


async def test_an_http_503_keeps_its_status_line_addresses_redacted_headers_and_4_kb_of_body(
    broken_site: int, evidence_name: str
) -> None:
    outcome = await _http(
        HttpCheck(
            url=f"http://{evidence_name}:{broken_site}/down",
            headers={"X-Api-Key": TOKEN},
        )
    )

    assert outcome.error_kind is ErrorKind.STATUS_CODE
    seen = outcome.evidence
    assert seen is not None
    assert seen["phase"] == "first_byte"
    assert seen["statusLine"] == "HTTP/1.1 503 Service Unavailable"
    assert seen["addresses"] == ["127.0.0.1"]
    headers = dict(seen["headers"])  # type: ignore[call-overload]
    assert headers["Set-Cookie"] == evidence.MASK
    assert headers["X-Echoed-Key"] == evidence.MASK
    body = str(seen["body"])
    assert body.startswith(f"{MARKER} key={evidence.MASK} ")
    assert len(body.encode()) <= evidence.BODY_BYTES
    assert seen["bodyTruncated"] is True
    text = json.dumps(seen)
    assert TOKEN not in text
    assert "cookie-secret-value" not in text


async def test_a_failure_over_a_reused_keep_alive_connection_still_names_its_address(
    broken_site: int,
) -> None:
    # A short body arrives with the headers, so aiohttp hands the connection back before the
    # probe sees it; the second check reuses it and passes no resolver or socket factory.
    async with guarded_session(LENIENT) as session:
        check = HttpCheck(url=f"http://127.0.0.1:{broken_site}/short")
        first = await probe_http(check, session)
        second = await probe_http(check, session)

    for outcome in (first, second):
        assert outcome.error_kind is ErrorKind.STATUS_CODE
        assert outcome.evidence is not None
        assert outcome.evidence["addresses"] == ["127.0.0.1"]


async def test_a_passing_http_check_keeps_no_evidence(broken_site: int) -> None:
    outcome = await _http(HttpCheck(url=f"http://127.0.0.1:{broken_site}/up"))

    assert outcome.ok
    assert outcome.evidence is None


async def test_a_missing_keyword_keeps_the_body_it_searched_with_the_body_phase(
    broken_site: int,
) -> None:
    outcome = await _http(HttpCheck(url=f"http://127.0.0.1:{broken_site}/up", keyword="absent"))

    assert outcome.error_kind is ErrorKind.KEYWORD
    assert outcome.evidence is not None
    assert outcome.evidence["phase"] == "body"
    assert outcome.evidence["body"] == "fine"
    assert outcome.evidence["statusLine"] == "HTTP/1.1 200 OK"


async def test_an_http_connection_refused_keeps_the_connect_phase_error_class_and_addresses(
    evidence_name: str,
) -> None:
    closed = await _closed_port()

    outcome = await _http(HttpCheck(url=f"http://{evidence_name}:{closed}/"))

    assert outcome.error_kind is ErrorKind.CONNECT
    assert outcome.evidence is not None
    assert outcome.evidence["phase"] == "connect"
    assert outcome.evidence["errorClass"] == "ClientConnectorError"
    assert outcome.evidence["addresses"] == ["127.0.0.1"]
    assert "statusLine" not in outcome.evidence


async def test_an_unresolvable_name_keeps_the_dns_phase() -> None:
    outcome = await _http(HttpCheck(url="http://no-such-name.invalid/"))

    assert outcome.error_kind is ErrorKind.DNS
    assert outcome.evidence is not None
    assert outcome.evidence["phase"] == "dns"


async def _closed_port() -> int:
    """A loopback port that nothing listens on (bound, then released)."""
    server = await asyncio.start_server(lambda _r, _w: None, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    server.close()
    await server.wait_closed()
    return port


async def test_a_tcp_connection_refused_keeps_the_connect_phase_and_addresses() -> None:
    outcome = await probe_tcp("127.0.0.1", await _closed_port(), 5, LENIENT)

    assert not outcome.ok
    assert outcome.evidence == {
        "phase": "connect",
        "errorClass": "ConnectionRefusedError",
        "addresses": ["127.0.0.1"],
    }


async def test_a_certificate_close_to_expiry_keeps_its_subject_issuer_and_expiry(
    ca: trustme.CA, ca_file: str
) -> None:
    not_after = datetime.now(UTC).replace(microsecond=0) + timedelta(days=3)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", not_after=not_after).configure_cert(context)

    async def drain(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    server = await asyncio.start_server(drain, "127.0.0.1", 0, ssl=context)
    port = int(server.sockets[0].getsockname()[1])
    try:
        outcome = await probe_tls("127.0.0.1", port, 5, LENIENT, ca_file=ca_file)
    finally:
        server.close()
        await server.wait_closed()

    assert outcome.error_kind is ErrorKind.CERTIFICATE_EXPIRY
    seen = outcome.evidence
    assert seen is not None
    assert seen["phase"] == "tls"
    assert seen["addresses"] == ["127.0.0.1"]
    tls = seen["tls"]
    assert isinstance(tls, dict)
    assert tls["notAfter"] == not_after.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "trustme" in str(tls["issuer"])
    assert tls["subject"] != tls["issuer"]
