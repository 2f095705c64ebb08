"""WHOIS (RFC 3912) for domain checks of TLDs without RDAP: the query, and reading the expiry
date out of the free-text answer."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

from upwatch.kit.net import NetworkGuard
from upwatch.probes.connect import CheckClock, connect
from upwatch.probes.rdap import NotRegistered, Registration

WHOIS_PORT: Final = 43
# Registries whose server is not whois.nic.<tld>.
_SERVERS: Final = {
    "de": "whois.denic.de",
    "eu": "whois.eu",
    "ru": "whois.tcinet.ru",
    "jp": "whois.jprs.jp",
    "it": "whois.nic.it",
    "be": "whois.dns.be",
    "pl": "whois.dns.pl",
}
_MAX_ANSWER_BYTES: Final = 256_000

# Label of the expiry line, as different registries write it; the first found wins.
_EXPIRY = re.compile(
    r"^\s*(?:registry expiry date|registrar registration expiration date|expiry date"
    r"|expiration date|expiration time|expires on|expires|expire|paid-till|renewal date)"
    r"\s*:\s*(?P<value>\S.*?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_REGISTRAR = re.compile(r"^\s*registrar\s*:\s*(?P<value>\S.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_NOT_FOUND = re.compile(
    r"^\s*(?:no match for|not found|no data found|no entries found|domain not found"
    r"|status:\s*(?:free|available))",
    re.IGNORECASE | re.MULTILINE,
)
_DATE_FORMATS: Final = (
    "%Y-%m-%d",
    "%Y.%m.%d",
    "%d-%b-%Y",
    "%d.%m.%Y",
    "%Y/%m/%d",
    "%Y-%m-%d %H:%M:%S",
    "%Y.%m.%d %H:%M:%S",
    "%d-%b-%Y %H:%M:%S",
)


def whois_server(tld: str) -> str:
    return _SERVERS.get(tld.lower(), f"whois.nic.{tld.lower()}")


def _date(text: str) -> datetime | None:
    """A WHOIS date: ISO 8601 with a time, or one of the plain forms registries print."""
    cleaned = text.strip().removesuffix(" UTC").removesuffix(" (UTC)").strip()
    try:
        moment = datetime.fromisoformat(cleaned.replace("z", "Z"))
    except ValueError:
        moment = None
        for layout in _DATE_FORMATS:
            try:
                moment = datetime.strptime(cleaned, layout)  # noqa: DTZ007 - UTC set below
                break
            except ValueError:
                continue
    if moment is None:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_whois(answer: str, domain: str) -> Registration:
    """The registration an answer describes; raises ``NotRegistered`` when it says the
    domain is unknown. An answer without a readable expiry date has ``expires_at`` None."""
    expires_at = None
    for match in _EXPIRY.finditer(answer):
        expires_at = _date(match["value"])
        if expires_at is not None:
            break
    if expires_at is None and _NOT_FOUND.search(answer):
        raise NotRegistered(f"the registry does not know {domain} (WHOIS: no match)")
    registrar = _REGISTRAR.search(answer)
    return Registration(
        expires_at=expires_at,
        registrar=registrar["value"] if registrar else None,
        source="whois",
    )


async def whois_query(
    domain: str, server: str, port: int, guard: NetworkGuard, clock: CheckClock
) -> str:
    """Send ``domain`` to the WHOIS server and read its answer to the end (bounded in size).
    Raises what ``CONNECT_ERRORS`` lists; the caller bounds the time."""
    stream = await connect(server, port, guard, clock)
    try:
        stream.writer.write(f"{domain}\r\n".encode("ascii"))
        await stream.writer.drain()
        data = await stream.reader.read(_MAX_ANSWER_BYTES)
        chunks = [data]
        total = len(data)
        while data and total < _MAX_ANSWER_BYTES:
            data = await stream.reader.read(_MAX_ANSWER_BYTES - total)
            chunks.append(data)
            total += len(data)
    finally:
        await stream.close()
    clock.first_byte()
    # Registries answer in ASCII or UTF-8; a stray Latin-1 byte must not fail the check.
    return b"".join(chunks).decode("utf-8", errors="replace")
