"""The TLS probe against a real TLS server on loopback, with certificates from a test CA."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import trustme

from upwatch.kit.net import NetworkGuard
from upwatch.probes.outcome import ErrorKind
from upwatch.probes.tls import probe_tls

LENIENT = NetworkGuard(allow_private=True)

Serve = Callable[..., Awaitable[int]]


@pytest.fixture
async def serve(ca: trustme.CA) -> AsyncIterator[Serve]:
    """Start a TLS server on 127.0.0.1 presenting a certificate issued with the given options."""
    servers: list[asyncio.Server] = []

    async def drain(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    async def greet_in_plain_text(
        _reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        writer.write(b"220 plain.upwatch.test ESMTP\r\n")
        await writer.drain()
        writer.close()

    async def start(
        *identities: str,
        tls: bool = True,
        not_before: datetime | None = None,
        not_after: datetime | None = None,
    ) -> int:
        context: ssl.SSLContext | None = None
        if tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            leaf = ca.issue_cert(*identities, not_before=not_before, not_after=not_after)
            leaf.configure_cert(context)
        handler = drain if tls else greet_in_plain_text
        server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=context)
        servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


async def test_a_valid_certificate_is_up_and_reports_its_days_to_expiry(
    serve: Serve, ca_file: str
) -> None:
    not_after = datetime.now(UTC) + timedelta(days=90, hours=1)
    port = await serve("127.0.0.1", not_after=not_after)

    outcome = await probe_tls("127.0.0.1", port, 5, LENIENT, ca_file=ca_file)

    assert outcome.ok, outcome.error
    assert outcome.details["daysToExpiry"] == 90
    assert outcome.details["notAfter"] == not_after.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert outcome.timings is not None
    assert outcome.timings.connect_ms is not None
    assert outcome.timings.tls_ms is not None


async def test_a_certificate_close_to_expiry_is_down_with_the_expiry_kind(
    serve: Serve, ca_file: str
) -> None:
    port = await serve("127.0.0.1", not_after=datetime.now(UTC) + timedelta(days=5, hours=1))

    outcome = await probe_tls("127.0.0.1", port, 5, LENIENT, warn_days=14, ca_file=ca_file)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.CERTIFICATE_EXPIRY
    assert outcome.details["daysToExpiry"] == 5


async def test_an_expired_certificate_is_a_tls_failure_that_says_so(
    serve: Serve, ca_file: str
) -> None:
    now = datetime.now(UTC)
    port = await serve(
        "127.0.0.1", not_before=now - timedelta(days=30), not_after=now - timedelta(days=1)
    )

    outcome = await probe_tls("127.0.0.1", port, 5, LENIENT, ca_file=ca_file)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.TLS
    assert outcome.error == "certificate verification failed: certificate has expired"


async def test_a_certificate_for_another_host_is_a_tls_failure_that_says_so(
    serve: Serve, ca_file: str
) -> None:
    port = await serve("other.upwatch.test")

    outcome = await probe_tls("127.0.0.1", port, 5, LENIENT, ca_file=ca_file)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.TLS
    assert outcome.error is not None
    assert "mismatch" in outcome.error


async def test_a_certificate_from_an_unknown_authority_is_a_tls_failure(
    serve: Serve, tmp_path: Path
) -> None:
    port = await serve("127.0.0.1")
    stranger = tmp_path / "stranger.pem"
    trustme.CA().cert_pem.write_to_path(str(stranger))

    outcome = await probe_tls("127.0.0.1", port, 5, LENIENT, ca_file=str(stranger))

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.TLS
    assert outcome.error is not None
    assert "certificate verification failed" in outcome.error


async def test_a_port_that_does_not_speak_tls_is_a_tls_failure(serve: Serve, ca_file: str) -> None:
    port = await serve(tls=False)

    outcome = await probe_tls("127.0.0.1", port, 5, LENIENT, ca_file=ca_file)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.TLS


async def test_a_loopback_host_is_refused_when_private_targets_are_not_allowed(
    serve: Serve, ca_file: str
) -> None:
    port = await serve("127.0.0.1")

    outcome = await probe_tls(
        "127.0.0.1", port, 5, NetworkGuard(allow_private=False), ca_file=ca_file
    )

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.REFUSED_TARGET
