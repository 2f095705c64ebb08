"""IMAP probe: the server greets with ``* OK``, upgrades to TLS (STARTTLS or implicit) and,
given credentials, accepts a LOGIN."""

from __future__ import annotations

from typing import NamedTuple

from upwatch.kit.languages import N_
from upwatch.probes.kind import MonitorKind
from upwatch.probes.mail_protocols import (
    MAX_LINES,
    Conversation,
    MailConfig,
    MailProbe,
    Refusal,
    mail_form,
    quoted,
)
from upwatch.probes.outcome import ErrorKind

DEFAULT_PORTS = {"starttls": 143, "implicit": 993, "none": 143}


class Imap:
    name = "IMAP"

    def __init__(self) -> None:
        self._tags = 0

    async def greet(self, talk: Conversation) -> str:
        line = await talk.line()
        status = line.split(" ", 2)[:2]
        if status not in (["*", "OK"], ["*", "PREAUTH"]):
            raise Refusal(ErrorKind.UNEXPECTED_REPLY, f"IMAP greeting refused: {quoted(line)}")
        return line

    async def command(self, talk: Conversation, *words: bytes | Literal8) -> tuple[str, str]:
        """Send a tagged command and read up to its tagged answer: its status and line.

        A literal waits for the server's ``+`` before its bytes go."""
        self._tags += 1
        tag = f"a{self._tags}"
        line = tag.encode()
        for word in words:
            if isinstance(word, bytes):
                line += b" " + word
                continue
            await talk.send(line + b" {%d}" % len(word.data))
            answer = await talk.line()
            if not answer.startswith("+"):
                return _status(tag, answer), answer
            line = word.data
        await talk.send(line)
        for _ in range(MAX_LINES):
            answer = await talk.line()
            if answer.startswith(f"{tag} "):
                return _status(tag, answer), answer
        raise Refusal(ErrorKind.UNEXPECTED_REPLY, f"no IMAP answer in {MAX_LINES} lines")

    async def start_tls(self, talk: Conversation) -> None:
        status, answer = await self.command(talk, b"STARTTLS")
        if status != "OK":
            raise Refusal(ErrorKind.TLS, f"STARTTLS refused: {quoted(answer)}")

    async def secured(self, talk: Conversation) -> None:
        pass  # nothing to say again: the LOGIN or LOGOUT follows

    async def login(self, talk: Conversation, username: str, password: str) -> None:
        secret = _astring(password)
        if isinstance(secret, bytes):
            talk.hide(secret.decode())
        status, answer = await self.command(talk, b"LOGIN", _astring(username), secret)
        if status != "OK":
            raise Refusal(ErrorKind.LOGIN, f"login refused: {quoted(answer)}")

    async def goodbye(self, talk: Conversation) -> None:
        await self.command(talk, b"LOGOUT")


def _status(tag: str, answer: str) -> str:
    return answer[len(tag) + 1 :].split(" ", 1)[0].upper()


class Literal8(NamedTuple):
    """Bytes sent as an IMAP literal: their length in braces, then (once asked) the bytes."""

    data: bytes


def _astring(text: str) -> bytes | Literal8:
    """``text`` as an IMAP string: quoted when it is plain ASCII, else a literal - RFC 3501
    allows no 8-bit text in a quoted string."""
    if text.isascii():
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'.encode()
    return Literal8(text.encode())


class ImapConfig(MailConfig):
    pass


KIND = MonitorKind(
    name="imap",
    label=N_("IMAP server"),
    rank=9,
    config=ImapConfig,
    probe=MailProbe(Imap, DEFAULT_PORTS),
    form=mail_form(DEFAULT_PORTS),
    speaks_tls=True,
)
