"""WebSocket probe: the opening handshake at ``url`` (ws or wss), optionally a message sent and
a reply that must match a pattern, and for wss the certificate's expiry.

It runs on the probes' ``guarded_session``, so the target is resolved through the guard and
internal addresses are refused at connection time, as for HTTP.
"""

from __future__ import annotations

import asyncio
import errno
import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Annotated, Final

import aiohttp
import regex
from pydantic import Field, field_validator

from upwatch.kit.inputs import Input, worded
from upwatch.kit.languages import N_
from upwatch.kit.net import TargetRefused
from upwatch.probes.assertions import PATTERN_SECONDS, Assertion, BadAssertion, validate
from upwatch.probes.connect import CheckClock, Phase, classify
from upwatch.probes.http import HeaderText
from upwatch.probes.kind import FormField, MonitorKind
from upwatch.probes.outcome import ErrorKind, Outcome, Timings
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec
from upwatch.probes.tls import certificate_expiry

# A reply longer than this fails the check rather than filling a worker's memory.
MAX_REPLY_BYTES: Final = 1_048_576
# Shown in an error: enough of a reply to recognise it.
_SHOWN_CHARS = 200
# Closing politely must not hold a probe slot for long.
_CLOSE_SECONDS = 2.0


@dataclass(frozen=True)
class WebSocketCheck:
    url: str
    message: str | None = None
    expect_reply: str | None = None  # a pattern searched in the first reply
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    timeout_seconds: float = 10
    ca_file: str | None = None  # replaces the system trust store (tests)


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…"


def _failure(error: BaseException, timeout_seconds: float) -> tuple[ErrorKind, str, int | None]:
    """What failed before the socket opened, with the HTTP status when one answered."""

    def reaching(cause: OSError | TargetRefused, phase: Phase) -> tuple[ErrorKind, str, None]:
        kind, message = classify(cause, phase, "WebSocket handshake", timeout_seconds)
        return kind, message, None

    match error:
        case TargetRefused():
            return reaching(error, Phase.CONNECT)
        case aiohttp.WSServerHandshakeError() if error.status != 101:
            return (
                ErrorKind.STATUS_CODE,
                f"handshake refused: expected HTTP 101, got {error.status}",
                error.status,
            )
        case aiohttp.WSServerHandshakeError():
            return ErrorKind.CONNECT, f"invalid WebSocket handshake: {error.message}", None
        case aiohttp.ClientConnectorDNSError():
            return reaching(error.os_error, Phase.DNS)
        case aiohttp.ClientSSLError():
            return reaching(error.os_error, Phase.TLS)
        case aiohttp.ClientConnectorError():
            return reaching(error.os_error, Phase.CONNECT)
        case TimeoutError():
            return reaching(error, Phase.RESPONSE)
        case aiohttp.ServerDisconnectedError() | ConnectionResetError():
            # Which of the two a hang-up raises depends on when it lands.
            return ErrorKind.CONNECT, "the server closed the connection during the handshake", None
        case aiohttp.ClientResponseError():
            return ErrorKind.CONNECT, f"invalid HTTP response: {error.message}", None
        case aiohttp.ClientOSError() if error.errno == errno.ECONNRESET:
            return ErrorKind.CONNECT, "the server closed the connection during the handshake", None
        case aiohttp.ClientError() | OSError():
            return ErrorKind.CONNECT, str(error) or type(error).__name__, None
    raise error


def _reply_text(message: aiohttp.WSMessage) -> str | None:
    """The data of a text or binary frame (binary decoded leniently); None for anything else."""
    if message.type is aiohttp.WSMsgType.TEXT:
        return str(message.data)
    if message.type is aiohttp.WSMsgType.BINARY:
        return bytes(message.data).decode("utf-8", errors="replace")
    return None


def _judge_reply(pattern: str, reply: str) -> str | None:
    """Why the reply does not do, or None when the pattern is found in it."""
    try:
        found = regex.search(pattern, reply, timeout=PATTERN_SECONDS, concurrent=True)
    except TimeoutError:
        return f"the pattern {pattern!r} took too long on the reply"
    if found is None:
        return f"reply {_shown(reply)!r} does not match {pattern!r}"
    return None


async def probe_websocket(check: WebSocketCheck, session: aiohttp.ClientSession) -> Outcome:
    """Open the socket, send ``message`` if any, and wait for a reply if ``expect_reply``.

    Timings: ``first_byte_ms`` when the handshake completed, ``total_ms`` (also the response
    time) when the reply was judged. DNS and connect are not split out: aiohttp does not
    trace a WebSocket handshake's connection for a caller.
    """
    clock = CheckClock()
    secure = check.url.startswith("wss:")
    tls: ssl.SSLContext | bool = (
        ssl.create_default_context(cafile=check.ca_file) if check.ca_file else True
    )
    details: dict[str, object] = {}
    opened = False
    reply: str | None = None
    closed_early: str | None = None
    finished: Timings | None = None  # set once the reply (if any) is in; closing may follow
    try:
        async with asyncio.timeout(check.timeout_seconds):
            async with session.ws_connect(
                check.url,
                headers=dict(check.headers),
                ssl=tls,
                max_msg_size=MAX_REPLY_BYTES,
                timeout=aiohttp.ClientWSTimeout(ws_close=_CLOSE_SECONDS),
            ) as ws:
                opened = True
                clock.phase = Phase.RESPONSE
                clock.first_byte()
                if secure:
                    # Read while the connection is held: it is released when the socket closes.
                    peercert = ws.get_extra_info("peercert")
                    if peercert:
                        days, not_after = certificate_expiry(peercert)
                        details.update(daysToExpiry=days, notAfter=not_after)
                if check.message is not None:
                    await ws.send_str(check.message)
                if check.expect_reply is not None:
                    answer = await ws.receive()
                    reply = _reply_text(answer)
                    if reply is None:
                        closed_early = _closed_words(answer, ws.close_code)
                finished = clock.timings()
    except TimeoutError:
        timings = clock.timings()
        if finished is not None:
            pass  # only the closing handshake was late: what was found stands
        elif not opened:
            kind, message, _ = _failure(TimeoutError(), check.timeout_seconds)
            return Outcome(
                ok=False, response_time_ms=None, error_kind=kind, error=message, timings=timings
            )
        else:
            return Outcome(
                ok=False,
                response_time_ms=None,
                error_kind=ErrorKind.TIMEOUT,
                error=f"no reply within {check.timeout_seconds:g}s",
                timings=timings,
                details=details,
            )
    except (aiohttp.ClientError, OSError, TargetRefused) as exc:
        timings = clock.timings()
        if finished is not None:
            pass  # the closing handshake failed: what was found stands
        elif opened:
            return Outcome(
                ok=False,
                response_time_ms=None,
                error_kind=ErrorKind.CONNECT,
                error=f"the connection failed after the handshake: {exc}",
                timings=timings,
                details=details,
            )
        else:
            kind, message, status = _failure(exc, check.timeout_seconds)
            return Outcome(
                ok=False,
                response_time_ms=None,
                status_code=status,
                error_kind=kind,
                error=message,
                timings=timings,
            )

    timings = finished or clock.timings()
    failure: tuple[ErrorKind, str] | None = None
    if closed_early is not None:
        failure = ErrorKind.UNEXPECTED_REPLY, closed_early
    elif check.expect_reply is not None and reply is not None:
        # In a thread: the search releases the GIL (concurrent=True), so a costly pattern on
        # a long reply holds neither the loop nor the other checks' timings.
        wrong = await asyncio.to_thread(_judge_reply, check.expect_reply, reply)
        if wrong is not None:
            failure = ErrorKind.UNEXPECTED_REPLY, wrong
    return Outcome(
        ok=failure is None,
        response_time_ms=timings.total_ms,
        status_code=101,
        error_kind=None if failure is None else failure[0],
        error=None if failure is None else failure[1],
        timings=timings,
        details=details,
    )


def _closed_words(answer: aiohttp.WSMessage, code: int | None) -> str:
    if answer.type is aiohttp.WSMsgType.ERROR:
        return f"no reply: the connection failed ({answer.data})"
    said = f" (close code {code})" if code is not None else ""
    return f"no reply: the server closed the WebSocket{said}"


class WebSocketProbe:
    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        assert spec.url is not None
        settings = spec.settings
        check = WebSocketCheck(
            url=spec.url,
            message=settings.get("message"),
            expect_reply=settings.get("expectReply"),
            headers=dict(spec.headers),
            timeout_seconds=spec.timeout_seconds,
        )
        return await probe_websocket(check, kit.http)


# ---- the monitor type ----------------------------------------------------------------------

WS_URL_PATTERN = worded(
    r"^wss?://[^\u0000-\u0020\u007f-\u009f]+$",
    "a ws:// or wss:// address without spaces or control characters",
)
WsUrl = Annotated[str, Field(min_length=1, max_length=2048, pattern=WS_URL_PATTERN)]


class WebSocketConfig(Input):
    url: WsUrl
    message: Annotated[str, Field(min_length=1, max_length=65_536)] | None = Field(
        default=None, description="Text sent once the socket is open"
    )
    expectReply: Annotated[str, Field(min_length=1, max_length=500)] | None = Field(
        default=None,
        description="A pattern (regular expression) searched in the first message the server "
        "sends (after `message`, when one is sent); no reply in time, or one it is not found "
        "in, is down",
        examples=["^pong$"],
    )
    headers: Annotated[dict[str, HeaderText], Field(max_length=50)] = Field(
        default_factory=dict,
        description="Sent with the opening handshake (Authorization is masked in responses)",
    )

    @field_validator("expectReply")
    @classmethod
    def _usable_pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                # The rules (and cost bounds) of an HTTP `matches` assertion's pattern.
                validate(Assertion("body", "matches", value=json.dumps(value)))
            except BadAssertion as exc:
                raise ValueError(str(exc)) from None
        return value


KIND = MonitorKind(
    name="websocket",
    label=N_("WebSocket"),
    rank=11,
    config=WebSocketConfig,
    probe=WebSocketProbe(),
    form=(
        FormField("url", N_("URL"), "url", hint="e.g. wss://example.com/socket"),
        FormField("message", N_("Message to send"), hint="Optional"),
        FormField("expectReply", N_("Expected reply (pattern)"), hint="Optional, e.g. ^pong$"),
    ),
    url_schemes=("ws", "wss"),
    speaks_tls=True,
)
