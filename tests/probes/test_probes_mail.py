"""The smtp, imap and pop3 probes against real servers on loopback: aiosmtpd, and dovecot when
it is installed (tests/mail_servers.py)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest
import trustme

from tests.mail_servers import (
    PASSWORD,
    USER,
    Dovecot,
    SmtpServers,
    running_dovecot,
    smtp_servers_of,
)
from upwatch.kit.net import NetworkGuard
from upwatch.probes.imap import Imap
from upwatch.probes.mail_protocols import MailProtocol, MailTarget, TlsMode, probe_mail
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.pop3 import Pop3
from upwatch.probes.smtp import Smtp

LENIENT = NetworkGuard(allow_private=True)

Protocols: dict[str, Callable[[], MailProtocol]] = {"smtp": Smtp, "imap": Imap, "pop3": Pop3}


async def check(
    protocol: str,
    port: int,
    ca_file: str | None,
    tls: TlsMode = "starttls",
    username: str | None = None,
    password: str | None = None,
    guard: NetworkGuard = LENIENT,
) -> Outcome:
    target = MailTarget("127.0.0.1", port, tls, username, password)
    return await probe_mail(Protocols[protocol](), target, 5, guard, ca_file=ca_file)


def never_shows(outcome: Outcome, secret: str) -> None:
    shown = f"{outcome.error} {outcome.details}"
    assert secret not in shown
    assert base64.b64encode(secret.encode()).decode() not in shown


@pytest.fixture
async def smtp_servers(ca: trustme.CA) -> AsyncIterator[SmtpServers]:
    async with smtp_servers_of(ca) as servers:
        yield servers


@pytest.fixture
async def dovecot(ca: trustme.CA) -> AsyncIterator[Dovecot]:
    async with running_dovecot(ca) as server:
        yield server


Serve = Callable[[bytes, bytes], Awaitable[int]]


@pytest.fixture
async def say() -> AsyncIterator[Serve]:
    """A server that greets with the given line and then answers each line it is sent with
    that line after the given prefix - a rude server that repeats what it was told."""
    servers: list[asyncio.Server] = []

    async def start(greeting: bytes, prefix: bytes) -> int:
        async def talk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(greeting)
            while line := await reader.readline():
                writer.write(prefix + line)
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(talk, "127.0.0.1", 0)
        servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


Script = Callable[[bytes, dict[bytes, bytes]], Awaitable[int]]


@pytest.fixture
async def scripted() -> AsyncIterator[Script]:
    """A server that greets with the given bytes and answers each line by the first entry
    of ``answers`` the line starts with (``500 what?`` when none does)."""
    servers: list[asyncio.Server] = []

    async def start(greeting: bytes, answers: dict[bytes, bytes]) -> int:
        async def talk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(greeting)
            while line := await reader.readline():
                found = (a for start, a in answers.items() if line.upper().startswith(start))
                writer.write(next(found, b"500 what?\r\n"))
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(talk, "127.0.0.1", 0)
        servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    ("protocol", "greeting", "answers", "error"),
    [
        (
            "smtp",
            b"220 hi\r\n",
            {b"EHLO": b"250-hi\r\n250 STARTTLS\r\n", b"STARTTLS": b"454 4.7.0 not now\r\n"},
            "STARTTLS refused: 454 4.7.0 not now",
        ),
        (
            "imap",
            b"* OK hi\r\n",
            {b"A1 STARTTLS": b"a1 NO not now\r\n", b"A2 LOGOUT": b"a2 OK bye\r\n"},
            "STARTTLS refused: a1 NO not now",
        ),
        ("pop3", b"+OK hi\r\n", {b"STLS": b"-ERR not now\r\n"}, "STLS refused: -ERR not now"),
    ],
)
async def test_a_refused_starttls_is_down_with_a_tls_error_quoting_the_server(
    scripted: Script,
    ca_file: str,
    protocol: str,
    greeting: bytes,
    answers: dict[bytes, bytes],
    error: str,
) -> None:
    port = await scripted(greeting, answers)

    outcome = await check(protocol, port, ca_file)

    assert (outcome.error_kind, outcome.error) == (ErrorKind.TLS, error)


async def test_an_overlong_endless_or_missing_greeting_is_down_with_an_unexpected_reply(
    scripted: Script, open_port: int, ca_file: str
) -> None:
    overlong = await scripted(b"220 " + b"x" * 9000 + b"\r\n", {})
    endless = await scripted(b"220-more\r\n" * 101, {})

    long_line = await check("smtp", overlong, ca_file)
    many_lines = await check("smtp", endless, ca_file)
    hung_up = await check("imap", open_port, ca_file)

    assert long_line.error_kind is ErrorKind.UNEXPECTED_REPLY
    assert long_line.error == "a reply line is longer than 8192 bytes"
    assert many_lines.error_kind is ErrorKind.UNEXPECTED_REPLY
    assert many_lines.error == "an SMTP reply longer than 100 lines"
    assert hung_up.error_kind is ErrorKind.UNEXPECTED_REPLY
    assert hung_up.error == "the server closed the connection"


async def test_a_server_without_the_offered_login_is_down_with_a_login_error(
    scripted: Script, ca_file: str
) -> None:
    port = await scripted(b"220 hi\r\n", {b"EHLO": b"250-hi\r\n250 AUTH CRAM-MD5\r\n"})

    outcome = await check("smtp", port, ca_file, "none", USER, PASSWORD)

    assert outcome.error_kind is ErrorKind.LOGIN
    assert outcome.error == "the SMTP server offers no AUTH PLAIN or LOGIN (CRAM-MD5)"


# ---- SMTP ------------------------------------------------------------------------------------


async def test_an_smtp_server_with_starttls_is_up_and_reports_its_certificate_expiry(
    smtp_servers: SmtpServers, ca_file: str
) -> None:
    not_after = datetime.now(UTC) + timedelta(days=90, hours=1)
    port = await smtp_servers.start("starttls", not_after=not_after)

    outcome = await check("smtp", port, ca_file)

    assert outcome.ok, outcome.error
    assert str(outcome.details["greeting"]).startswith("220 mail.upwatch.test")
    assert outcome.details["daysToExpiry"] == 90
    assert outcome.details["notAfter"] == not_after.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert outcome.details["tlsVersion"] in ("TLSv1.2", "TLSv1.3")
    assert outcome.timings is not None
    assert outcome.timings.tls_ms is not None
    assert outcome.timings.first_byte_ms is not None


async def test_an_smtp_server_with_implicit_tls_is_up(
    smtp_servers: SmtpServers, ca_file: str
) -> None:
    port = await smtp_servers.start("implicit")

    outcome = await check("smtp", port, ca_file, tls="implicit")

    assert outcome.ok, outcome.error
    assert "daysToExpiry" in outcome.details


async def test_an_smtp_server_checked_without_tls_is_up_and_reports_no_certificate(
    smtp_servers: SmtpServers, ca_file: str
) -> None:
    port = await smtp_servers.start("none")

    outcome = await check("smtp", port, ca_file, tls="none")

    assert outcome.ok, outcome.error
    assert "daysToExpiry" not in outcome.details


async def test_an_smtp_login_with_the_right_password_is_up(
    smtp_servers: SmtpServers, ca_file: str
) -> None:
    port = await smtp_servers.start("starttls")

    outcome = await check("smtp", port, ca_file, username=USER, password=PASSWORD)

    assert outcome.ok, outcome.error


async def test_an_smtp_login_with_a_wrong_password_is_down_and_never_shows_it(
    smtp_servers: SmtpServers, ca_file: str
) -> None:
    port = await smtp_servers.start("implicit")

    outcome = await check("smtp", port, ca_file, "implicit", USER, "wrong-pass-42")

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.LOGIN
    assert "login refused: 535" in str(outcome.error)
    never_shows(outcome, "wrong-pass-42")


async def test_a_stopped_smtp_server_is_down_with_a_connect_error(
    smtp_servers: SmtpServers, ca_file: str
) -> None:
    port = await smtp_servers.start("starttls")
    await smtp_servers.stop(port)

    outcome = await check("smtp", port, ca_file)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.CONNECT
    assert outcome.error == "cannot connect: connection refused"


async def test_an_smtp_server_without_starttls_is_down_when_starttls_is_asked(
    smtp_servers: SmtpServers, ca_file: str
) -> None:
    port = await smtp_servers.start("none")

    outcome = await check("smtp", port, ca_file, tls="starttls")

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.TLS
    assert outcome.error == "the SMTP server does not offer STARTTLS"


async def test_an_smtp_certificate_from_an_unknown_authority_is_down_with_a_tls_error(
    smtp_servers: SmtpServers, tmp_path_factory: pytest.TempPathFactory
) -> None:
    port = await smtp_servers.start("starttls")
    # A CA file of another authority: the server's certificate is not trusted.
    other = tmp_path_factory.mktemp("other") / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))

    outcome = await check("smtp", port, str(other))

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.TLS
    assert "certificate verification failed" in str(outcome.error)


async def test_an_expired_smtp_certificate_is_down_with_a_tls_error(
    smtp_servers: SmtpServers, ca_file: str
) -> None:
    port = await smtp_servers.start("implicit", not_after=datetime.now(UTC) - timedelta(days=1))

    outcome = await check("smtp", port, ca_file, tls="implicit")

    assert outcome.error_kind is ErrorKind.TLS
    assert outcome.error == "certificate verification failed: certificate has expired"


async def test_a_server_greeting_in_another_protocol_is_down_with_an_unexpected_reply(
    say: Serve, ca_file: str
) -> None:
    port = await say(b"+OK POP3 server ready\r\n", b"-ERR ")

    outcome = await check("smtp", port, ca_file)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.UNEXPECTED_REPLY
    assert outcome.error == "not an SMTP reply: +OK POP3 server ready"


async def test_imap_and_pop3_pointed_at_an_smtp_server_are_down_naming_its_greeting(
    smtp_servers: SmtpServers, ca_file: str
) -> None:
    port = await smtp_servers.start("none")

    imap = await check("imap", port, ca_file)
    pop3 = await check("pop3", port, ca_file)

    assert imap.error_kind is ErrorKind.UNEXPECTED_REPLY
    assert str(imap.error).startswith("IMAP greeting refused: 220 mail.upwatch.test")
    assert pop3.error_kind is ErrorKind.UNEXPECTED_REPLY
    assert str(pop3.error).startswith("not a POP3 reply: 220 mail.upwatch.test")


async def test_a_server_echoing_the_login_back_never_gets_the_password_into_the_error(
    say: Serve, ca_file: str
) -> None:
    smtp_port = await say(b"220 ready\r\n", b"250 ")  # EHLO passes, AUTH is echoed
    smtp = await check("smtp", smtp_port, ca_file, "none", USER, 'echo-"me"-9')
    imap_port = await say(b"* OK ready\r\n", b"a1 NO ")
    imap = await check("imap", imap_port, ca_file, "none", USER, 'echo-"me"-9')
    pop3_port = await say(b"+OK ready\r\n", b"-ERR ")
    pop3 = await check("pop3", pop3_port, ca_file, "none", USER, 'echo-"me"-9')

    assert smtp.error_kind is ErrorKind.LOGIN
    assert imap.error_kind is ErrorKind.LOGIN
    assert imap.error == 'login refused: a1 NO a1 LOGIN "alice" ***'
    assert pop3.error_kind is ErrorKind.LOGIN
    assert pop3.error == "login refused: -ERR USER alice"
    for outcome in (smtp, imap, pop3):
        never_shows(outcome, 'echo-"me"-9')
        never_shows(outcome, "me")


async def test_a_private_target_is_refused_when_private_targets_are_not_allowed(
    smtp_servers: SmtpServers, ca_file: str
) -> None:
    port = await smtp_servers.start("starttls")

    for protocol in Protocols:
        outcome = await check(protocol, port, ca_file, guard=NetworkGuard(allow_private=False))

        assert not outcome.ok
        assert outcome.error_kind is ErrorKind.REFUSED_TARGET, protocol


# ---- IMAP and POP3 (dovecot) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "plain", "secure"), [("imap", "imap", "imaps"), ("pop3", "pop3", "pop3s")]
)
async def test_dovecot_is_up_with_starttls_and_with_implicit_tls_and_reports_its_certificate(
    dovecot: Dovecot, ca_file: str, protocol: str, plain: str, secure: str
) -> None:
    upgraded = await check(protocol, dovecot.ports[plain], ca_file, "starttls")
    implicit = await check(protocol, dovecot.ports[secure], ca_file, "implicit")
    unencrypted = await check(protocol, dovecot.ports[plain], ca_file, "none")

    for outcome in (upgraded, implicit):
        assert outcome.ok, outcome.error
        assert isinstance(outcome.details["daysToExpiry"], int)
        assert outcome.details["daysToExpiry"] > 0
    assert unencrypted.ok, unencrypted.error
    assert "daysToExpiry" not in unencrypted.details


@pytest.mark.parametrize("protocol", ["imap", "pop3"])
async def test_a_dovecot_login_with_the_right_password_is_up_and_a_wrong_one_down(
    dovecot: Dovecot, ca_file: str, protocol: str
) -> None:
    port = dovecot.ports[protocol]

    right = await check(protocol, port, ca_file, "starttls", USER, PASSWORD)
    wrong = await check(protocol, port, ca_file, "starttls", USER, "wrong-pass-42")

    assert right.ok, right.error
    assert not wrong.ok
    assert wrong.error_kind is ErrorKind.LOGIN
    assert str(wrong.error).startswith("login refused: ")
    never_shows(wrong, "wrong-pass-42")


@pytest.mark.parametrize("protocol", ["imap", "pop3"])
async def test_a_dovecot_login_with_a_non_ascii_password_is_down_cleanly(
    dovecot: Dovecot, ca_file: str, protocol: str
) -> None:
    # IMAP sends it as a literal; either way the server refuses a wrong one by the rules.
    port = dovecot.ports[protocol]

    outcome = await check(protocol, port, ca_file, "starttls", USER, "pässwörd")

    assert outcome.error_kind is ErrorKind.LOGIN, outcome.error
    never_shows(outcome, "pässwörd")


async def test_a_stopped_dovecot_is_down_with_a_connect_error(
    dovecot: Dovecot, ca_file: str
) -> None:
    await dovecot.stop()

    for protocol in ("imap", "pop3"):
        outcome = await check(protocol, dovecot.ports[protocol], ca_file)

        assert outcome.error_kind is ErrorKind.CONNECT, outcome.error
