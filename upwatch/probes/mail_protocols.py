"""What the mail types (smtp, imap, pop3) share: their config fields, the line-by-line
conversation on a guarded connection, STARTTLS or implicit TLS, and the check that drives a
protocol's steps. Each type's module only says how its protocol greets, upgrades, logs in and
says goodbye.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
import time
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Literal, Protocol, Self

from pydantic import Field, model_validator

from upwatch.kit.inputs import Input, worded
from upwatch.kit.languages import N_
from upwatch.kit.net import NetworkGuard, TargetRefused
from upwatch.probes.connect import CONNECT_ERRORS, CheckClock, Phase, Stream, connect, failed
from upwatch.probes.fields import Host, Port
from upwatch.probes.kind import FormField, secret
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec
from upwatch.probes.tls import certificate_expiry

TlsMode = Literal["starttls", "implicit", "none"]

# Bounds on what a server may send: a line (RFC 5321 allows 512 bytes for a reply line; IMAP
# capability lines run longer) and the lines of one reply, so a chatty peer cannot hold a slot.
MAX_LINE = 8192
MAX_LINES = 100
# What an error message quotes of a server's reply.
_QUOTED = 200
# Closing words (QUIT, LOGOUT) are a courtesy: they get little time and their failure is no
# finding about the server.
_GOODBYE_SECONDS = 2.0

# A name or password goes on a command line: no line breaks or NUL, which would end it.
_NO_BREAKS = worded(r"^[^\r\n\x00]+$", "text without line breaks")
Username = Annotated[str, Field(min_length=1, max_length=200, pattern=_NO_BREAKS)]
Password = Annotated[str, Field(min_length=1, max_length=500, pattern=_NO_BREAKS)]


class MailConfig(Input):
    """The fields every mail type declares alike."""

    host: Host
    port: Port | None = Field(
        default=None,
        description="Mail monitors: the port; null: the protocol's usual one for the TLS mode",
    )
    tls: TlsMode | None = Field(
        default="starttls",
        description="Mail monitors: `starttls` upgrades a plain connection, `implicit` speaks "
        "TLS from the first byte, `none` never encrypts; null on update: `starttls`",
    )
    username: Username | None = Field(
        default=None, description="Mail monitors: logs in as this user (with `password`)"
    )
    password: Password | None = secret("Mail monitors: the login's password.")

    @model_validator(mode="after")
    def _both_or_neither(self) -> Self:
        if (self.username is None) != (self.password is None):
            missing = "password" if self.password is None else "username"
            raise ValueError(f"{missing} is needed too: give both username and password or neither")
        return self


def mail_form(default_ports: dict[str, int]) -> tuple[FormField, ...]:
    ports = ", ".join(f"{port} ({mode})" for mode, port in default_ports.items())
    return (
        FormField("host", N_("Host")),
        FormField("port", N_("Port"), "number", hint=f"Default: {ports}"),
        FormField("tls", N_("TLS")),
        FormField("username", N_("Username")),
        FormField("password", N_("Password"), "password"),
    )


class Refusal(Exception):
    """The server answered, but not as a healthy one does: what failed, in clear words."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def quoted(reply: str) -> str:
    """A server's reply as an error message quotes it: one line, bounded."""
    text = " ".join(reply.split())
    return text if len(text) <= _QUOTED else f"{text[:_QUOTED]}..."


class Conversation:
    """Lines to and from the server on one connection, TLS-upgradable in place."""

    def __init__(self, stream: Stream, clock: CheckClock) -> None:
        self.stream = stream
        self.clock = clock
        self.tls_ms: float | None = None
        # How the password went on the wire (quoted, base64): a server that echoes a command
        # back must not get any of them into an error message.
        self.hidden: list[str] = []
        self.certificate: dict[str, object] = {}

    def hide(self, *forms: str) -> None:
        self.hidden.extend(forms)

    async def line(self) -> str:
        """One line, without its line break; a hang-up or an overlong line is a refusal."""
        overlong = Refusal(
            ErrorKind.UNEXPECTED_REPLY, f"a reply line is longer than {MAX_LINE} bytes"
        )
        try:
            raw = await self.stream.reader.readline()
        except ValueError:  # longer than the reader's whole buffer
            raise overlong from None
        if self.clock.first_byte_ms is None:
            self.clock.first_byte()
        if len(raw) > MAX_LINE:
            raise overlong
        if not raw.endswith(b"\n"):
            raise Refusal(ErrorKind.UNEXPECTED_REPLY, "the server closed the connection")
        return raw.rstrip(b"\r\n").decode("utf-8", errors="replace")

    async def send(self, text: str | bytes) -> None:
        data = text.encode() if isinstance(text, str) else text
        self.stream.writer.write(data + b"\r\n")
        await self.stream.writer.drain()

    async def secure(self, context: ssl.SSLContext, server_name: str) -> None:
        """TLS on the open connection (implicit at once, or after STARTTLS), timed apart."""
        self.clock.phase = Phase.TLS
        started = time.perf_counter()
        await self.stream.writer.start_tls(context, server_hostname=server_name)
        self.tls_ms = (time.perf_counter() - started) * 1000
        self.clock.phase = Phase.RESPONSE
        # Read now: once the connection is closed, the transport knows nothing.
        peercert = self.stream.writer.get_extra_info("peercert")
        ssl_object = self.stream.writer.get_extra_info("ssl_object")
        if peercert:
            self.certificate["daysToExpiry"], self.certificate["notAfter"] = certificate_expiry(
                peercert
            )
        if isinstance(ssl_object, ssl.SSLObject):
            self.certificate["tlsVersion"] = ssl_object.version()

    @property
    def local_address(self) -> str:
        sockname = self.stream.writer.get_extra_info("sockname")
        return str(sockname[0]) if sockname else "127.0.0.1"


class MailProtocol(Protocol):
    """One protocol's steps; each raises ``Refusal`` when the server answers wrongly."""

    name: str  # as messages say it: "SMTP"

    async def greet(self, talk: Conversation) -> str:
        """Read the greeting; return its text for the details."""
        ...

    async def start_tls(self, talk: Conversation) -> None:
        """Ask for TLS on the plain connection (the upgrade itself is the driver's)."""
        ...

    async def secured(self, talk: Conversation) -> None:
        """What the protocol says again once TLS is up (SMTP's second EHLO)."""
        ...

    async def login(self, talk: Conversation, username: str, password: str) -> None: ...

    async def goodbye(self, talk: Conversation) -> None: ...


def _scrubbed(text: str, forms: list[str]) -> str:
    """``text`` without any form of the password, longest first."""
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, "***")
    return text


@dataclasses.dataclass(frozen=True)
class MailTarget:
    host: str
    port: int
    tls: TlsMode
    username: str | None = None
    password: str | None = None


async def probe_mail(
    protocol: MailProtocol,
    target: MailTarget,
    timeout_seconds: float,
    guard: NetworkGuard,
    ca_file: str | None = None,
) -> Outcome:
    """Connect through ``guard``, read the greeting, secure the connection as ``target.tls``
    says, log in when there are credentials, and say goodbye.

    ``ca_file`` replaces the system trust store (tests trust their own CA with it). The
    certificate's days to expiry are reported in the details, as the ``tls`` type does.
    """
    context = ssl.create_default_context(cafile=ca_file)
    host = target.host
    server_name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    clock = CheckClock()
    stream: Stream | None = None
    talk: Conversation | None = None
    details: dict[str, object] = {}
    polite = False  # whether the server is in a state to hear a goodbye
    try:
        async with asyncio.timeout(timeout_seconds):
            stream = await connect(server_name, target.port, guard, clock)
            details["address"] = stream.address
            talk = Conversation(stream, clock)
            if target.tls == "implicit":
                await talk.secure(context, server_name)
            clock.phase = Phase.RESPONSE
            details["greeting"] = quoted(await protocol.greet(talk))
            if target.tls == "starttls":
                await protocol.start_tls(talk)
                await talk.secure(context, server_name)
            if target.tls != "none":
                await protocol.secured(talk)
            if target.username is not None and target.password is not None:
                await protocol.login(talk, target.username, target.password)
            # Timed before the goodbye: closing is no part of the check's time.
            timings = clock.timings()
            polite = True
    except CONNECT_ERRORS as exc:
        outcome = failed(exc, clock, _awaited(clock.phase, protocol), timeout_seconds)
        if clock.phase is Phase.RESPONSE and not isinstance(
            exc, (TimeoutError, ssl.SSLError, TargetRefused)
        ):
            # A plain-text step that failed on the network: not a TLS matter.
            outcome = dataclasses.replace(
                outcome,
                error_kind=ErrorKind.UNEXPECTED_REPLY,
                error=f"{protocol.name} conversation broke off: {exc}",
            )
        return _finished(outcome, talk, details, target.password)
    except Refusal as refusal:
        # After a reply out of step, a goodbye would only wait for another one.
        polite = refusal.kind is not ErrorKind.UNEXPECTED_REPLY
        outcome = Outcome(
            ok=False,
            response_time_ms=None,
            error_kind=refusal.kind,
            error=refusal.message,
            timings=clock.timings(),
        )
        return _finished(outcome, talk, details, target.password)
    finally:
        if stream is not None and talk is not None and polite:
            await _close(protocol, talk, stream)
        elif stream is not None:
            await stream.close()
    outcome = Outcome(ok=True, response_time_ms=timings.total_ms, timings=timings)
    return _finished(outcome, talk, details, target.password)


def _awaited(phase: Phase, protocol: MailProtocol) -> str:
    if phase is Phase.TLS:
        return "TLS handshake"
    if phase is Phase.RESPONSE:
        return f"{protocol.name} reply"
    return "connection"


async def _close(protocol: MailProtocol, talk: Conversation, stream: Stream) -> None:
    try:
        async with asyncio.timeout(_GOODBYE_SECONDS):
            await protocol.goodbye(talk)
    except (*CONNECT_ERRORS, Refusal):
        pass  # the check's finding is made; a rude goodbye changes nothing
    await stream.close()


def _finished(
    outcome: Outcome, talk: Conversation | None, details: dict[str, object], password: str | None
) -> Outcome:
    """The outcome with the certificate's expiry and the TLS timing, the password scrubbed."""
    if talk is not None:
        details.update(talk.certificate)
    timings = outcome.timings
    if timings is not None and talk is not None and talk.tls_ms is not None:
        timings = dataclasses.replace(timings, tls_ms=talk.tls_ms)
    forms = [password, *(talk.hidden if talk is not None else [])] if password else []

    def clean(text: str) -> str:
        return _scrubbed(text, forms)

    return dataclasses.replace(
        outcome,
        timings=timings,
        error=clean(outcome.error) if outcome.error is not None else None,
        details={k: clean(v) if isinstance(v, str) else v for k, v in details.items()},
    )


class MailProbe:
    """The probe of one mail type: the spec's fields, the protocol's default ports."""

    def __init__(self, protocol: Callable[[], MailProtocol], default_ports: dict[str, int]) -> None:
        self.protocol = protocol  # made anew for each check: a conversation has state
        self.default_ports = default_ports

    def target_of(self, spec: CheckSpec) -> MailTarget:
        assert spec.host is not None
        settings = spec.settings
        mode: TlsMode = settings.get("tls") or "starttls"
        return MailTarget(
            host=spec.host,
            port=spec.port or self.default_ports[mode],
            tls=mode,
            username=settings.get("username"),
            password=settings.get("password"),
        )

    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        return await probe_mail(
            self.protocol(), self.target_of(spec), spec.timeout_seconds, kit.guard
        )
