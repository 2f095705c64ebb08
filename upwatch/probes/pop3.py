"""POP3 probe: the server greets with ``+OK``, upgrades to TLS (STLS or implicit) and, given
credentials, accepts USER and PASS."""

from __future__ import annotations

from upwatch.kit.languages import N_
from upwatch.probes.kind import MonitorKind
from upwatch.probes.mail_protocols import (
    Conversation,
    MailConfig,
    MailProbe,
    Refusal,
    mail_form,
    quoted,
)
from upwatch.probes.outcome import ErrorKind

DEFAULT_PORTS = {"starttls": 110, "implicit": 995, "none": 110}


async def _ok(talk: Conversation, command: str | None) -> tuple[bool, str]:
    """Send ``command`` (if any) and read its one-line answer: ``+OK`` or not."""
    if command is not None:
        await talk.send(command)
    line = await talk.line()
    if not line.startswith(("+OK", "-ERR")):
        raise Refusal(ErrorKind.UNEXPECTED_REPLY, f"not a POP3 reply: {quoted(line)}")
    return line.startswith("+OK"), line


class Pop3:
    name = "POP3"

    async def greet(self, talk: Conversation) -> str:
        ok, line = await _ok(talk, None)
        if not ok:
            raise Refusal(ErrorKind.UNEXPECTED_REPLY, f"POP3 greeting refused: {quoted(line)}")
        return line

    async def start_tls(self, talk: Conversation) -> None:
        ok, line = await _ok(talk, "STLS")
        if not ok:
            raise Refusal(ErrorKind.TLS, f"STLS refused: {quoted(line)}")

    async def secured(self, talk: Conversation) -> None:
        pass  # POP3 has nothing to say again

    async def login(self, talk: Conversation, username: str, password: str) -> None:
        for command in (f"USER {username}", f"PASS {password}"):
            ok, line = await _ok(talk, command)
            if not ok:
                raise Refusal(ErrorKind.LOGIN, f"login refused: {quoted(line)}")

    async def goodbye(self, talk: Conversation) -> None:
        await _ok(talk, "QUIT")


class Pop3Config(MailConfig):
    pass


KIND = MonitorKind(
    name="pop3",
    label=N_("POP3 server"),
    rank=10,
    config=Pop3Config,
    probe=MailProbe(Pop3, DEFAULT_PORTS),
    form=mail_form(DEFAULT_PORTS),
    speaks_tls=True,
)
