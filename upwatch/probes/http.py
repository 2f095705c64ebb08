"""HTTP(S) probe: status code, optional keyword and assertions, redirects, capped body, phase
timings.

Run it on a ``guarded_session`` (``upwatch.kit.net``): that session refuses internal targets at
connection time, redirects included, and fills the DNS and connect timings. On any other
session the probe still works, without those two timings and without the guard.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Annotated, Any, Literal

import aiohttp
from pydantic import Field
from yarl import URL

from upwatch.kit.inputs import HEADER_NAME_PATTERN, HTTP_URL_PATTERN, SINGLE_LINE_PATTERN, Input
from upwatch.kit.languages import N_
from upwatch.kit.net import ConnectionPhases, PeerResponse, TargetRefused, resolved_addresses
from upwatch.probes import evidence
from upwatch.probes.assertions import Assertion, Operator, Response, Source, first_failure
from upwatch.probes.connect import CheckClock, Phase, classify
from upwatch.probes.judging import judged
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome, Timings
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec
from upwatch.probes.tls import certificate_expiry

_CHUNK_BYTES = 64 * 1024
_DEFAULT_EXPECTED = "200-399"


@dataclass(frozen=True)
class HttpCheck:
    url: str
    method: str = "GET"
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    body: str | None = None
    expected_status_codes: tuple[int, ...] = ()  # empty means 200-399
    keyword: str | None = None
    timeout_seconds: float = 10
    max_redirects: int = 5
    verify_tls: bool = True
    max_body_bytes: int = 1_048_576
    assertions: tuple[Assertion, ...] = ()
    project_id: str = ""  # whose turn at the assertion judges (judging.py)


@dataclass(frozen=True, slots=True)
class _Body:
    keyword_found: bool
    exceeded_cap: bool
    kept: bytes = b""  # the body up to the cap, when an assertion reads it
    head: bytes = b""  # the first bytes, for a failure's evidence


def _status_expected(check: HttpCheck, status: int) -> bool:
    if check.expected_status_codes:
        return status in check.expected_status_codes
    return 200 <= status <= 399


def _describe_codes(codes: tuple[int, ...]) -> str:
    """``(200, 201, ..., 299, 304)`` as ``200-299, 304``: short enough for an alert line."""
    if not codes:
        return _DEFAULT_EXPECTED
    ordered = sorted(set(codes))
    runs: list[str] = []
    start = previous = ordered[0]
    for code in [*ordered[1:], None]:
        if code is not None and code == previous + 1:
            previous = code
            continue
        runs.append(str(start) if start == previous else f"{start}-{previous}")
        if code is not None:
            start = previous = code
    return ", ".join(runs)


async def _read_body(response: aiohttp.ClientResponse, check: HttpCheck) -> _Body:
    """Stream at most ``max_body_bytes`` (after decompression), searching for the keyword.

    Bytes are compared, not decoded text, so a body's charset never matters for an ASCII
    or UTF-8 keyword. Reading stops at the cap: a larger body is only a failure when the
    keyword was still missing, because then its absence cannot be stated.
    """
    needle = check.keyword.encode() if check.keyword else None
    keep = any(a.needs_body for a in check.assertions)
    seen = bytearray()
    kept = bytearray()
    head = b""
    received = 0
    found = needle is None
    async for chunk in response.content.iter_chunked(_CHUNK_BYTES):
        if len(head) <= evidence.BODY_BYTES:
            # One more byte than is shown, so the evidence knows there was more.
            head += chunk[: evidence.BODY_BYTES + 1 - len(head)]
        room = check.max_body_bytes - received
        received += len(chunk)
        if keep:
            kept += chunk[: max(room, 0)]
        if not found and needle is not None:
            # Overlap with the previous bytes so a keyword split across chunks is found.
            start = max(0, len(seen) - len(needle) + 1)
            seen += chunk[: max(room, 0)]
            found = seen.find(needle, start) != -1
        if received > check.max_body_bytes:
            return _Body(keyword_found=found, exceeded_cap=True, kept=bytes(kept), head=head)
    return _Body(keyword_found=found, exceeded_cap=False, kept=bytes(kept), head=head)


def _certificate(response: aiohttp.ClientResponse) -> tuple[int, str] | None:
    """Days left and ``notAfter`` of the certificate the final response came over, when it
    came over verified TLS.

    A ``guarded_session`` keeps it on the response (``PeerResponse``); on another session
    it is read from the connection, which is gone once aiohttp released it.
    """
    if isinstance(response, PeerResponse):
        peercert = response.peercert
    else:
        transport = response.connection.transport if response.connection else None
        peercert = transport.get_extra_info("peercert") if transport else None
    return certificate_expiry(peercert) if peercert else None


def _failure(error: BaseException, check: HttpCheck) -> tuple[ErrorKind, str]:
    """Map a request failure onto what failed; order matters (subclasses first).

    aiohttp wraps what connecting raised in the phase it happened; unwrapped, it is named
    as the other network probes name it.
    """

    def reaching(cause: OSError | TargetRefused, phase: Phase) -> tuple[ErrorKind, str]:
        return classify(cause, phase, "complete response", check.timeout_seconds)

    match error:
        case TargetRefused():
            return reaching(error, Phase.CONNECT)
        case aiohttp.TooManyRedirects():
            return ErrorKind.TOO_MANY_REDIRECTS, f"more than {check.max_redirects} redirects"
        case aiohttp.ClientConnectorDNSError():
            return reaching(error.os_error, Phase.DNS)
        case aiohttp.ClientSSLError():
            # Certificate errors included: their os_error is the verification error.
            return reaching(error.os_error, Phase.TLS)
        case aiohttp.ClientConnectorError():
            return reaching(error.os_error, Phase.CONNECT)
        case TimeoutError():
            return reaching(error, Phase.RESPONSE)
        case aiohttp.RedirectClientError():
            return ErrorKind.CONNECT, f"redirected to a URL that cannot be followed: {error}"
        case aiohttp.ClientResponseError():
            return ErrorKind.CONNECT, f"invalid HTTP response: {' '.join(error.message.split())}"
        case aiohttp.ClientPayloadError():
            return ErrorKind.CONNECT, f"invalid response body: {error}"
        case aiohttp.ServerDisconnectedError():
            return ErrorKind.CONNECT, "the server closed the connection without a response"
        case aiohttp.ClientError() | OSError():
            return ErrorKind.CONNECT, str(error) or type(error).__name__
    raise error


def _error_phase(error: BaseException, answered: bool, connected: bool) -> str:
    """Where the check was when ``error`` ended it (the evidence's ``phase``)."""
    match error:
        case aiohttp.ClientConnectorDNSError():
            return "dns"
        case aiohttp.ClientSSLError():
            return "tls"
        case TargetRefused() | aiohttp.ClientConnectorError():
            return "connect"
    if answered:
        return "body"
    return "first_byte" if connected else "connect"


def _seen(
    check: HttpCheck,
    phase: str,
    addresses: list[str],
    response: aiohttp.ClientResponse | None,
    transport: asyncio.BaseTransport | None,
    body: bytes | None = None,
    error: BaseException | None = None,
) -> dict[str, object]:
    """The evidence of a failed request: made on the failure path only."""
    peer = transport.get_extra_info("peername") if transport is not None else None
    if isinstance(peer, tuple) and peer and str(peer[0]) not in addresses:
        addresses = [*addresses, str(peer[0])]
    if isinstance(response, PeerResponse) and response.peer_address not in (None, *addresses):
        addresses = [*addresses, str(response.peer_address)]
    peercert = transport.get_extra_info("peercert") if transport is not None else None
    if isinstance(response, PeerResponse) and response.peercert:
        peercert = response.peercert  # kept by the response: the connection may be gone
    try:
        password = URL(check.url).password
    except (ValueError, TypeError):
        password = None
    status_line = headers = None
    if response is not None:
        version = response.version
        http = f"HTTP/{version.major}.{version.minor}" if version else "HTTP"
        status_line = f"{http} {response.status} {response.reason or ''}".rstrip()
        headers = list(response.headers.items())
    return evidence.build(
        phase,
        error=error,
        addresses=addresses,
        status_line=status_line,
        headers=headers,
        body=body,
        tls=evidence.certificate(peercert) if isinstance(peercert, dict) else None,
        secrets=evidence.secret_values(check.headers.items(), password),
    )


async def probe_http(check: HttpCheck, session: aiohttp.ClientSession) -> Outcome:
    """One request to ``check.url``; never raises for a failure on the target's side.

    Timings: ``dns_ms`` and ``connect_ms`` come from the session's trace config (see
    ``ConnectionPhases``; ``connect_ms`` includes the TLS handshake, so ``tls_ms`` is None),
    ``first_byte_ms`` is from the start of the check to the final response's headers, and
    ``total_ms`` (also ``response_time_ms``) to the end of the capped body read.
    """
    phases = ConnectionPhases()
    clock = CheckClock()
    status: int | None = None
    addresses: list[str] = []
    watching = resolved_addresses.set(addresses)
    answered: aiohttp.ClientResponse | None = None
    transport: asyncio.BaseTransport | None = None

    def timings() -> Timings:
        clock.adopt(phases)
        return clock.timings()

    try:
        async with (
            asyncio.timeout(check.timeout_seconds),
            session.request(
                check.method.upper(),
                check.url,
                headers=dict(check.headers),
                data=None if check.body is None else check.body.encode(),
                allow_redirects=check.max_redirects > 0,
                # aiohttp counts the redirect it refuses to follow; ours counts followed ones.
                max_redirects=check.max_redirects + 1,
                ssl=check.verify_tls,
                timeout=aiohttp.ClientTimeout(total=check.timeout_seconds),
                trace_request_ctx=phases,
            ) as response,
        ):
            clock.first_byte()
            status = response.status
            # Kept (not read) for a failure's evidence: the connection is released after the
            # body, and with it the peer's address and certificate.
            answered = response
            transport = response.connection.transport if response.connection else None
            certificate = _certificate(response)
            body = await _read_body(response, check)
            headers = {name.lower(): value for name, value in response.headers.items()}
            details: dict[str, object] = {
                "redirects": len(response.history),
                "finalUrl": str(response.url),
            }
            if certificate is not None:
                details["daysToExpiry"], details["notAfter"] = certificate
    except (aiohttp.ClientError, OSError, TimeoutError, TargetRefused) as exc:
        kind, message = _failure(exc, check)
        elapsed = timings()
        connected = phases.connect_ms is not None or phases.reused_connection
        phase = _error_phase(exc, answered is not None, connected)
        seen = _seen(check, phase, addresses, answered, transport, error=exc)
        return Outcome(
            ok=False,
            # A response arrived before a timeout while reading its body: its time counts.
            response_time_ms=elapsed.total_ms if status is not None else None,
            status_code=status,
            error_kind=kind,
            error=message,
            timings=elapsed,
            evidence=seen,
        )
    finally:
        resolved_addresses.reset(watching)

    elapsed = timings()
    failure: tuple[ErrorKind, str] | None = None
    if not _status_expected(check, status):
        expected = _describe_codes(check.expected_status_codes)
        failure = ErrorKind.STATUS_CODE, f"expected {expected}, got {status}"
    elif not body.keyword_found and body.exceeded_cap:
        failure = (
            ErrorKind.RESPONSE_TOO_LARGE,
            f"keyword {check.keyword!r} not found in the first {check.max_body_bytes} bytes "
            "and the body is larger",
        )
    elif not body.keyword_found:
        failure = ErrorKind.KEYWORD, f"keyword {check.keyword!r} not found in the body"
    elif check.assertions:
        answer = Response(
            status=status,
            headers=headers,
            body=body.kept,
            response_time_ms=elapsed.total_ms or 0.0,
            body_complete=not body.exceeded_cap,
        )
        if any(a.needs_body for a in check.assertions):
            # Parsing the body and walking it is bounded, not free: in another process, so
            # other checks in flight keep their timings.
            failed = await judged(check.assertions, answer, check.project_id)
        else:
            failed = first_failure(check.assertions, answer)
        if failed is not None:
            failure = ErrorKind.ASSERTION, failed
    return Outcome(
        ok=failure is None,
        response_time_ms=elapsed.total_ms,
        status_code=status,
        error_kind=None if failure is None else failure[0],
        error=None if failure is None else failure[1],
        timings=elapsed,
        details=details,
        evidence=None
        if failure is None
        else _seen(
            check,
            "first_byte" if failure[0] is ErrorKind.STATUS_CODE else "body",
            addresses,
            answered,
            transport,
            body=body.head,
        ),
    )


class HttpProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.url is not None
        check = HttpCheck(
            url=spec.url,
            method=spec.method,
            headers=dict(spec.headers),
            body=spec.body,
            expected_status_codes=spec.expected_status_codes,
            keyword=spec.keyword,
            timeout_seconds=spec.timeout_seconds,
            assertions=spec.assertions,
            project_id=spec.project_id,
        )
        return await probe_http(check, kit.http)


# ---- the monitor type ----------------------------------------------------------------------

HttpMethod = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
HeaderText = Annotated[str, Field(max_length=1000, pattern=SINGLE_LINE_PATTERN)]
HeaderName = Annotated[str, Field(min_length=1, max_length=100, pattern=HEADER_NAME_PATTERN)]
Url = Annotated[str, Field(min_length=1, max_length=2048, pattern=HTTP_URL_PATTERN)]


class AssertionIn(Input):
    """A condition on an HTTP response; the first that does not hold fails the check with a
    message naming it."""

    source: Source = Field(
        description="What is read: a JSONPath into the JSON body (`path`), a header (`path` "
        "is its name), the body text, the response time in ms, the status code"
    )
    operator: Operator
    path: Annotated[str, Field(min_length=1, max_length=500)] | None = Field(
        default=None, examples=["$.status", "content-type"]
    )
    value: Annotated[str, Field(max_length=500)] | int | float | bool | None = Field(
        default=None,
        description="The expected value (a pattern for `matches`, a number for the "
        "orderings); left out for `exists` and `notExists`",
    )

    def stored(self) -> dict[str, Any]:
        """As kept on the monitor: `value` only when it was given (null is a value)."""
        kept: dict[str, Any] = {"source": self.source, "operator": self.operator}
        if self.path is not None:
            kept["path"] = self.path
        if "value" in self.model_fields_set:
            kept["value"] = self.value
        return kept


class HttpConfig(Input):
    url: Url
    method: HttpMethod = "GET"
    headers: Annotated[dict[str, HeaderText], Field(max_length=50)] = Field(
        default_factory=dict,
        description="Values of Authorization, Cookie, Proxy-Authorization and of the headers "
        "named in `secretHeaders` are masked in responses; sent back masked, they keep the "
        "stored value. On update, `{}` removes every header",
    )
    secretHeaders: Annotated[list[HeaderName], Field(max_length=50)] = Field(
        default_factory=list,
        description="Names of further headers whose values are secret (any letter case). A "
        "header stays secret until its value is replaced or removed: unmarking it alone does "
        "not reveal the stored value",
    )
    body: Annotated[str, Field(max_length=65_536)] | None = None
    expectedStatusCodes: Annotated[
        list[Annotated[int, Field(ge=100, le=599)]], Field(max_length=50)
    ] = Field(default_factory=list, description="`[]` means 200-399")
    keyword: Annotated[str, Field(min_length=1, max_length=500)] | None = None
    assertions: Annotated[list[AssertionIn], Field(max_length=20)] | None = Field(
        default=None,
        description="HTTP monitors: conditions on the response beyond its status code, "
        "checked in order (`[]` removes them)",
    )


KIND = MonitorKind(
    name="http",
    label=N_("HTTP(S)"),
    rank=1,
    config=HttpConfig,
    probe=HttpProbe(),
    form=(FormField("url", N_("URL"), "url", hint="e.g. https://example.com/health"),),
    speaks_tls=True,
)
