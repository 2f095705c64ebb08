"""The gRPC probe against a real grpcio server on loopback running the standard health service,
plain and over TLS with certificates from the test CA."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import grpc.aio
import pytest
import trustme
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer

from upwatch.kit.net import NetworkGuard
from upwatch.probes.grpc import GrpcCheck, probe_grpc
from upwatch.probes.outcome import ErrorKind

LENIENT = NetworkGuard(allow_private=True)
STRICT = NetworkGuard(allow_private=False)
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class Served:
    """A running health server: its port and its health servicer (set statuses on it)."""

    def __init__(self, server: grpc.aio.Server, port: int, health: HealthServicer) -> None:
        self.server = server
        self.port = port
        self.health = health

    async def stop(self) -> None:
        await self.server.stop(None)


Serve = Callable[..., Awaitable[Served]]


@pytest.fixture
async def serve(ca: trustme.CA) -> AsyncIterator[Serve]:
    """Start a grpcio aio server on 127.0.0.1 with the health service, over TLS when asked."""
    servers: list[grpc.aio.Server] = []

    async def start(*, tls: bool = False, not_after: datetime | None = None) -> Served:
        server = grpc.aio.server()
        health = HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health, server)
        if tls:
            leaf = ca.issue_cert("localhost", "127.0.0.1", not_after=not_after)
            credentials = grpc.ssl_server_credentials(
                [(leaf.private_key_pem.bytes(), leaf.cert_chain_pems[0].bytes())]
            )
            port = server.add_secure_port("127.0.0.1:0", credentials)
        else:
            port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        servers.append(server)
        return Served(server, port, health)

    yield start
    for server in servers:
        await server.stop(None)


async def test_a_serving_server_is_up(serve: Serve) -> None:
    served = await serve()

    outcome = await probe_grpc(GrpcCheck("127.0.0.1", served.port), LENIENT)

    assert outcome.ok, outcome.error
    assert outcome.details["status"] == "SERVING"
    assert outcome.timings is not None
    assert outcome.timings.dns_ms is not None


async def test_a_named_service_that_is_serving_is_up(serve: Serve) -> None:
    served = await serve()
    await served.health.set("shop.Orders", SERVING)

    outcome = await probe_grpc(GrpcCheck("127.0.0.1", served.port, service="shop.Orders"), LENIENT)

    assert outcome.ok, outcome.error


async def test_a_service_not_serving_is_down_naming_its_status(serve: Serve) -> None:
    served = await serve()
    await served.health.set("shop.Orders", NOT_SERVING)

    outcome = await probe_grpc(GrpcCheck("127.0.0.1", served.port, service="shop.Orders"), LENIENT)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.UNHEALTHY
    assert outcome.error == "service 'shop.Orders' reports NOT_SERVING"


async def test_a_service_the_server_does_not_know_is_down_saying_so(serve: Serve) -> None:
    served = await serve()

    outcome = await probe_grpc(GrpcCheck("127.0.0.1", served.port, service="nope.Gone"), LENIENT)

    assert outcome.error_kind is ErrorKind.UNHEALTHY
    assert "does not know the service 'nope.Gone'" in (outcome.error or "")


async def test_a_stopped_server_is_down_with_a_connect_error(serve: Serve) -> None:
    served = await serve()
    await served.stop()

    outcome = await probe_grpc(GrpcCheck("127.0.0.1", served.port, timeout_seconds=5), LENIENT)

    assert outcome.error_kind is ErrorKind.CONNECT
    assert (outcome.error or "").startswith("cannot connect")


async def test_a_tls_server_is_up_and_reports_its_certificates_expiry(
    serve: Serve, ca_file: str
) -> None:
    not_after = datetime.now(UTC) + timedelta(days=60, hours=1)
    served = await serve(tls=True, not_after=not_after)

    outcome = await probe_grpc(
        GrpcCheck("localhost", served.port, tls=True, ca_file=ca_file), LENIENT
    )

    assert outcome.ok, outcome.error
    assert outcome.details["daysToExpiry"] == 60
    assert outcome.details["notAfter"] == not_after.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert outcome.timings is not None
    assert outcome.timings.tls_ms is not None


async def test_a_tls_certificate_from_an_unknown_authority_is_down_with_a_tls_error(
    serve: Serve,
) -> None:
    served = await serve(tls=True)

    outcome = await probe_grpc(GrpcCheck("localhost", served.port, tls=True), LENIENT)

    assert outcome.error_kind is ErrorKind.TLS
    assert (outcome.error or "").startswith("certificate verification failed")


async def test_tls_asked_of_a_plain_server_is_down_with_a_tls_error(
    serve: Serve, ca_file: str
) -> None:
    served = await serve()

    outcome = await probe_grpc(
        GrpcCheck("127.0.0.1", served.port, tls=True, ca_file=ca_file, timeout_seconds=5), LENIENT
    )

    assert outcome.error_kind is ErrorKind.TLS


async def test_the_guard_refuses_a_private_target_when_not_allowed(serve: Serve) -> None:
    served = await serve()

    outcome = await probe_grpc(GrpcCheck("127.0.0.1", served.port), STRICT)

    assert outcome.error_kind is ErrorKind.REFUSED_TARGET
    assert "127.0.0.1 is not a public address (loopback)" in (outcome.error or "")


async def test_a_server_without_the_health_service_is_down_saying_so() -> None:
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        outcome = await probe_grpc(GrpcCheck("127.0.0.1", port), LENIENT)
    finally:
        await server.stop(None)

    assert outcome.error_kind is ErrorKind.UNEXPECTED_REPLY
    assert "no gRPC health service" in (outcome.error or "")


async def test_a_server_that_never_answers_is_down_with_a_timeout() -> None:
    accepted: list[asyncio.StreamWriter] = []

    async def listen_only(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await reader.read()
        writer.close()

    server = await asyncio.start_server(listen_only, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        outcome = await probe_grpc(GrpcCheck("127.0.0.1", port, timeout_seconds=0.5), LENIENT)
    finally:
        server.close()
        # Closing the server leaves accepted connections open (3.11): close them too, or one
        # is collected after its loop closed and warns in a later test.
        for writer in accepted:
            writer.close()
            await writer.wait_closed()
        await server.wait_closed()

    assert outcome.error_kind is ErrorKind.TIMEOUT
    assert outcome.error == "no health answer within 0.5s"
