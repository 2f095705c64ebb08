"""gRPC probe: the standard health service (``grpc.health.v1.Health/Check``) at ``host:port``.

The name is resolved through the guard and gRPC dials the vetted address, never the name, so
gRPC's own resolver cannot be steered elsewhere; with TLS the certificate is still verified
for the name (``grpc.ssl_target_name_override``). gRPC does not hand out the peer's
certificate, so with TLS one plain TLS handshake on the same address comes first: it reads
the expiry (and names certificate failures as the TLS probe does) for the price of one more
round trip.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from upwatch.kit.inputs import Input, worded
from upwatch.kit.languages import N_
from upwatch.kit.net import NetworkGuard
from upwatch.probes.connect import CONNECT_ERRORS, CheckClock, Phase, failed
from upwatch.probes.fields import Host, Port
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec
from upwatch.probes.tls import certificate_expiry

if TYPE_CHECKING:
    import grpc.aio


@dataclass(frozen=True)
class GrpcCheck:
    host: str
    port: int
    service: str = ""  # "" asks about the server as a whole
    tls: bool = False
    timeout_seconds: float = 10
    ca_file: str | None = None  # replaces the trust store, for both handshakes (tests)


def _target(address: str, port: int) -> str:
    """A gRPC target naming one address, so gRPC does no lookup of its own."""
    return f"ipv6:[{address}]:{port}" if ":" in address else f"ipv4:{address}:{port}"


async def _certificate(
    address: str, port: int, server_name: str, ca_file: str | None, clock: CheckClock
) -> dict[str, object]:
    """The verified peer certificate of ``address``, timing TCP connect and TLS apart."""
    _reader, writer = await asyncio.open_connection(address, port)
    try:
        clock.connected()
        context = ssl.create_default_context(cafile=ca_file)
        await writer.start_tls(context, server_hostname=server_name)
        clock.secured()
        peercert: dict[str, object] = writer.get_extra_info("peercert")
        return peercert
    finally:
        writer.close()
        try:
            async with asyncio.timeout(2):
                await writer.wait_closed()
        except (TimeoutError, OSError):
            writer.transport.abort()


def _channel(check: GrpcCheck, target: str, server_name: str) -> grpc.aio.Channel:
    import grpc.aio

    if not check.tls:
        return grpc.aio.insecure_channel(target)
    roots = Path(check.ca_file).read_bytes() if check.ca_file else None
    options = [
        ("grpc.ssl_target_name_override", server_name),
        ("grpc.default_authority", server_name),
    ]
    return grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(roots), options=options)


def _rpc_failure(error: grpc.aio.AioRpcError, check: GrpcCheck) -> tuple[ErrorKind, str]:
    import grpc

    code = error.code()
    said = error.details() or code.name
    if code is grpc.StatusCode.NOT_FOUND:
        named = check.service or "(the server)"
        return ErrorKind.UNHEALTHY, f"the server does not know the service {named!r} ({said})"
    if code is grpc.StatusCode.UNIMPLEMENTED:
        return ErrorKind.UNEXPECTED_REPLY, f"the server has no gRPC health service ({said})"
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return ErrorKind.TIMEOUT, f"no health answer within {check.timeout_seconds:g}s"
    if code is grpc.StatusCode.UNAVAILABLE:
        lowered = said.lower()
        if check.tls and any(w in lowered for w in ("ssl", "handshake", "certificate", "tls")):
            return ErrorKind.TLS, f"TLS handshake failed: {said}"
        return ErrorKind.CONNECT, f"cannot connect: {said}"
    return ErrorKind.CONNECT, f"gRPC error {code.name}: {said}"


async def probe_grpc(check: GrpcCheck, guard: NetworkGuard) -> Outcome:
    """Ask the health service about ``check.service``; up when it answers SERVING.

    Timings: ``dns_ms`` for the guard's lookup; with TLS ``connect_ms`` and ``tls_ms`` from
    the certificate handshake; ``total_ms`` to the health answer.
    """
    import grpc.aio
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    clock = CheckClock()
    server_name = check.host.strip("[]")
    details: dict[str, object] = {}
    try:
        async with asyncio.timeout(check.timeout_seconds):
            address = (await guard.resolve(server_name, check.port))[0]
            clock.resolved()
            if check.tls:
                peercert = await _certificate(
                    address, check.port, server_name, check.ca_file, clock
                )
                days, not_after = certificate_expiry(peercert)
                details.update(daysToExpiry=days, notAfter=not_after)
    except CONNECT_ERRORS as exc:
        return failed(
            exc, clock, "TLS handshake" if check.tls else "connection", check.timeout_seconds
        )

    clock.phase = Phase.RESPONSE
    left = max(check.timeout_seconds - clock.elapsed_ms() / 1000, 0.001)
    request = health_pb2.HealthCheckRequest(service=check.service)
    try:
        async with _channel(check, _target(address, check.port), server_name) as channel:
            stub: Any = health_pb2_grpc.HealthStub(channel)
            answer = await stub.Check(request, timeout=left)
    except grpc.aio.AioRpcError as exc:
        kind, message = _rpc_failure(exc, check)
        return Outcome(
            ok=False,
            response_time_ms=None,
            error_kind=kind,
            error=message,
            timings=clock.timings(),
            details=details,
        )

    timings = clock.timings()
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
    details["status"] = status
    serving = answer.status == health_pb2.HealthCheckResponse.SERVING
    named = f"service {check.service!r}" if check.service else "the server"
    return Outcome(
        ok=serving,
        response_time_ms=timings.total_ms,
        error_kind=None if serving else ErrorKind.UNHEALTHY,
        error=None if serving else f"{named} reports {status}",
        timings=timings,
        details=details,
    )


class GrpcProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.host is not None
        assert spec.port is not None
        settings = spec.settings
        check = GrpcCheck(
            host=spec.host,
            port=spec.port,
            service=settings.get("service") or "",
            tls=bool(settings.get("tls", False)),
            timeout_seconds=spec.timeout_seconds,
        )
        return await probe_grpc(check, kit.guard)


# ---- the monitor type ----------------------------------------------------------------------

SERVICE_PATTERN = worded(
    r"^[A-Za-z0-9_.\-/]+$",
    "a gRPC service name: letters, digits, dots, underscores, hyphens and slashes",
)


class GrpcConfig(Input):
    host: Host
    port: Port
    service: Annotated[str, Field(min_length=1, max_length=200, pattern=SERVICE_PATTERN)] | None = (
        Field(
            default=None,
            description="The service the health service is asked about (e.g. "
            "`my.package.Greeter`); left out, the server as a whole",
        )
    )
    # Nullable: a monitor of another type shows `tls: null`, and an update may send it back.
    tls: bool | None = Field(
        default=False,
        description="Dial with TLS, verifying the certificate for `host` (null: false)",
    )


KIND = MonitorKind(
    name="grpc",
    label=N_("gRPC health"),
    rank=12,
    config=GrpcConfig,
    probe=GrpcProbe(),
    form=(
        FormField("host", N_("Host")),
        FormField("port", N_("Port"), "number"),
        FormField("service", N_("Service"), hint="Optional: empty asks about the whole server"),
        FormField("tls", N_("Use TLS")),
    ),
    speaks_tls=True,
)
