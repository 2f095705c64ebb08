"""SMTP probe: the server greets with 220, says EHLO back, upgrades to TLS (STARTTLS or
implicit) and, given credentials, accepts them (AUTH PLAIN or LOGIN)."""

from __future__ import annotations

import base64
import ipaddress

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

DEFAULT_PORTS = {"starttls": 587, "implicit": 465, "none": 25}


async def reply(talk: Conversation) -> tuple[int, list[str]]:
    """One reply: its code and the text of its lines (``250-...`` lines continue it)."""
    texts: list[str] = []
    for _ in range(MAX_LINES):
        line = await talk.line()
        code, separator = line[:3], line[3:4]
        if not code.isdigit() or separator not in ("-", " ", ""):
            raise Refusal(ErrorKind.UNEXPECTED_REPLY, f"not an SMTP reply: {quoted(line)}")
        texts.append(line[4:])
        if separator != "-":
            return int(code), texts
    raise Refusal(ErrorKind.UNEXPECTED_REPLY, f"an SMTP reply longer than {MAX_LINES} lines")


def _said(code: int, texts: list[str]) -> str:
    return quoted(f"{code} {' '.join(texts)}")


class Smtp:
    name = "SMTP"

    def __init__(self) -> None:
        # What the last EHLO offered, by keyword (``AUTH`` -> ``PLAIN LOGIN``).
        self.offers: dict[str, str] = {}

    async def greet(self, talk: Conversation) -> str:
        code, texts = await reply(talk)
        if code != 220:
            greeting = _said(code, texts)
            raise Refusal(ErrorKind.UNEXPECTED_REPLY, f"SMTP greeting refused: {greeting}")
        await self._hello(talk)
        return f"{code} {texts[0]}"

    async def _hello(self, talk: Conversation) -> None:
        await talk.send(f"EHLO {_literal(talk.local_address)}")
        code, texts = await reply(talk)
        if code != 250:
            raise Refusal(ErrorKind.UNEXPECTED_REPLY, f"EHLO refused: {_said(code, texts)}")
        keywords = (text.partition(" ") for text in texts[1:])
        self.offers = {keyword.upper(): rest for keyword, _, rest in keywords}

    async def start_tls(self, talk: Conversation) -> None:
        if "STARTTLS" not in self.offers:
            raise Refusal(ErrorKind.TLS, "the SMTP server does not offer STARTTLS")
        await talk.send("STARTTLS")
        code, texts = await reply(talk)
        if code != 220:
            raise Refusal(ErrorKind.TLS, f"STARTTLS refused: {_said(code, texts)}")

    async def secured(self, talk: Conversation) -> None:
        await self._hello(talk)  # what the server offers may change once encrypted

    async def login(self, talk: Conversation, username: str, password: str) -> None:
        mechanisms = self.offers.get("AUTH", "").upper().split()
        if "PLAIN" in mechanisms:
            token = _b64(f"\0{username}\0{password}")
            talk.hide(token)
            await talk.send(f"AUTH PLAIN {token}")
        elif "LOGIN" in mechanisms:
            talk.hide(_b64(password))
            await talk.send("AUTH LOGIN")
            for answer in (username, password):
                code, texts = await reply(talk)
                if code != 334:
                    raise Refusal(ErrorKind.LOGIN, f"login refused: {_said(code, texts)}")
                await talk.send(_b64(answer))
        else:
            offered = " ".join(mechanisms) or "none"
            raise Refusal(
                ErrorKind.LOGIN, f"the SMTP server offers no AUTH PLAIN or LOGIN ({offered})"
            )
        code, texts = await reply(talk)
        if code != 235:
            raise Refusal(ErrorKind.LOGIN, f"login refused: {_said(code, texts)}")

    async def goodbye(self, talk: Conversation) -> None:
        await talk.send("QUIT")
        await reply(talk)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _literal(address: str) -> str:
    """The client's address as EHLO takes one it has no name for (RFC 5321 4.1.3)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    return f"[IPv6:{parsed}]" if parsed.version == 6 else f"[{parsed}]"


class SmtpConfig(MailConfig):
    pass


KIND = MonitorKind(
    name="smtp",
    label=N_("SMTP server"),
    rank=8,
    config=SmtpConfig,
    probe=MailProbe(Smtp, DEFAULT_PORTS),
    form=mail_form(DEFAULT_PORTS),
    speaks_tls=True,
)
