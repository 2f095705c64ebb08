"""RDAP for domain checks: the IANA bootstrap registry (RFC 9224), one domain's lookup
(RFC 9083) and the bootstrap's refresh.

The bootstrap file shipped with the package (``rdap_bootstrap.json``) says which RDAP server
answers for each TLD; ``upwatch rdap-refresh`` downloads IANA's current one into the data
directory, and the newer of the two by its ``publication`` date is used.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import aiohttp

from upwatch.kit.net import TargetRefused

IANA_BOOTSTRAP_URL: Final = "https://data.iana.org/rdap/dns.json"
BOOTSTRAP_NAME: Final = "rdap_bootstrap.json"
PACKAGED_BOOTSTRAP: Final = Path(__file__).with_name(BOOTSTRAP_NAME)
# IANA's file is about 100 KB; a download far larger is not that file.
_MAX_BOOTSTRAP_BYTES: Final = 4_000_000
_MAX_ANSWER_BYTES: Final = 1_000_000
_SECONDS_PER_DAY: Final = 86_400
RDAP_ERRORS: Final = (aiohttp.ClientError, OSError, TimeoutError, TargetRefused)


class BootstrapInvalid(ValueError):
    """A bootstrap file that is not RFC 9224's format."""


@dataclass(frozen=True)
class Bootstrap:
    published: datetime
    servers: Mapping[str, tuple[str, ...]]  # a lower-case TLD (or longer suffix) -> base URLs

    def base_url(self, domain: str) -> str | None:
        """The RDAP base URL for ``domain`` (ending in "/"), an HTTPS one first; None when
        no service covers it. Matching is by the longest run of trailing labels (RFC 9224 §4)."""
        labels = domain.lower().rstrip(".").split(".")
        for start in range(len(labels)):
            urls = self.servers.get(".".join(labels[start:]))
            if urls:
                chosen = next((u for u in urls if u.startswith("https://")), urls[0])
                return chosen if chosen.endswith("/") else chosen + "/"
        return None


def parse_bootstrap(data: bytes) -> Bootstrap:
    """Read a bootstrap file; raises ``BootstrapInvalid`` for anything but RFC 9224's shape."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BootstrapInvalid(f"not JSON: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("services"), list):
        raise BootstrapInvalid("no list of services")
    publication = document.get("publication")
    published = _instant(publication) if isinstance(publication, str) else None
    if published is None:
        raise BootstrapInvalid("no publication date")
    servers: dict[str, tuple[str, ...]] = {}
    for service in document["services"]:
        if not (isinstance(service, list) and len(service) >= 2):
            raise BootstrapInvalid("a service is not a pair of lists")
        names, urls = service[0], service[1]
        if not (
            isinstance(names, list)
            and isinstance(urls, list)
            and all(isinstance(n, str) for n in names)
            and all(isinstance(u, str) and u.startswith(("https://", "http://")) for u in urls)
        ):
            raise BootstrapInvalid("a service's names or URLs are not strings")
        for name in names:
            servers[name.lower()] = tuple(urls)
    if not servers:
        raise BootstrapInvalid("no services")
    return Bootstrap(published=published, servers=servers)


def _instant(text: str) -> datetime | None:
    """An RFC 3339 time as an aware datetime, or None."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def refreshed_path(data_dir: Path) -> Path:
    return data_dir / BOOTSTRAP_NAME


# Parsed files by path, kept while the file's modification time is the same.
_loaded: dict[Path, tuple[float, Bootstrap]] = {}


def _read(path: Path) -> Bootstrap | None:
    try:
        mtime = path.stat().st_mtime
        cached = _loaded.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        found = parse_bootstrap(path.read_bytes())
    except (OSError, BootstrapInvalid):
        return None
    _loaded[path] = (mtime, found)
    return found


def load_bootstrap(data_dir: Path | None) -> Bootstrap:
    """The newer of the packaged bootstrap and the one refreshed into ``data_dir``."""
    packaged = _read(PACKAGED_BOOTSTRAP)
    assert packaged is not None, "the packaged RDAP bootstrap file is missing or broken"
    local = _read(refreshed_path(data_dir)) if data_dir is not None else None
    if local is None:
        return packaged
    return local if local.published >= packaged.published else packaged


async def refresh_bootstrap(
    session: aiohttp.ClientSession, url: str, data_dir: Path, timeout_seconds: float = 30.0
) -> Bootstrap:
    """Download the bootstrap from ``url`` and put it in ``data_dir``, replacing the old file
    at once: a reader sees the old file or the new one, never half of one. A download that
    fails or is not a bootstrap file raises and leaves the old file as it was."""
    async with (
        asyncio.timeout(timeout_seconds),
        session.get(url, headers={"Accept": "application/json"}) as response,
    ):
        if response.status != 200:
            raise BootstrapInvalid(f"{url} answered HTTP {response.status}")
        data = await response.content.read(_MAX_BOOTSTRAP_BYTES + 1)
    if len(data) > _MAX_BOOTSTRAP_BYTES:
        raise BootstrapInvalid(f"{url} sent more than {_MAX_BOOTSTRAP_BYTES} bytes")
    found = parse_bootstrap(data)
    _install(data, data_dir)
    return found


def _install(data: bytes, data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=data_dir, prefix=f".{BOOTSTRAP_NAME}.")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, refreshed_path(data_dir))
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Registration:
    """What a registry says about one domain."""

    expires_at: datetime | None
    registrar: str | None
    source: str  # "rdap" or "whois"

    def days_left(self, now: datetime) -> int | None:
        """Whole days until expiry, negative once expired."""
        if self.expires_at is None:
            return None
        return math.floor((self.expires_at - now).total_seconds() / _SECONDS_PER_DAY)


class NotRegistered(Exception):
    """The registry does not know the domain."""


class LookupFailed(Exception):
    """The registry gave no usable answer; says nothing about the domain."""


async def rdap_lookup(
    session: aiohttp.ClientSession, base_url: str, domain: str, timeout_seconds: float
) -> Registration:
    """Ask the RDAP server at ``base_url`` about ``domain``.

    Raises ``NotRegistered`` on 404, ``LookupFailed`` on any other answer that is not a
    domain object, and what ``RDAP_ERRORS`` lists when the server cannot be reached in time.
    """
    url = f"{base_url.rstrip('/')}/domain/{domain}"
    async with (
        asyncio.timeout(timeout_seconds),
        session.get(
            url,
            headers={"Accept": "application/rdap+json, application/json"},
            timeout=aiohttp.ClientTimeout(total=timeout_seconds),
        ) as response,
    ):
        if response.status == 404:
            raise NotRegistered(f"the registry does not know {domain} (RDAP answered 404)")
        if response.status != 200:
            raise LookupFailed(f"the RDAP server answered HTTP {response.status}")
        data = await response.content.read(_MAX_ANSWER_BYTES)
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise LookupFailed("the RDAP answer is not JSON") from exc
    if not isinstance(document, dict) or document.get("objectClassName") != "domain":
        raise LookupFailed("the RDAP answer is not a domain object")
    return Registration(
        expires_at=_expiration(document), registrar=_registrar(document), source="rdap"
    )


def _expiration(document: Mapping[str, Any]) -> datetime | None:
    events = document.get("events")
    for event in events if isinstance(events, list) else ():
        if isinstance(event, dict) and event.get("eventAction") == "expiration":
            date = event.get("eventDate")
            return _instant(date) if isinstance(date, str) else None
    return None


def _registrar(document: Mapping[str, Any]) -> str | None:
    """The formatted name (vCard ``fn``) of the entity whose role is registrar."""
    entities = document.get("entities")
    for entity in entities if isinstance(entities, list) else ():
        if not (isinstance(entity, dict) and "registrar" in (entity.get("roles") or ())):
            continue
        card = entity.get("vcardArray")
        properties = card[1] if isinstance(card, list) and len(card) > 1 else ()
        for item in properties if isinstance(properties, list) else ():
            if isinstance(item, list) and len(item) >= 4 and item[0] == "fn":
                return str(item[3]) or None
    return None
