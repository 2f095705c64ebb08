"""The domain probe against a real RDAP server and a real WHOIS server on loopback, and the
RDAP bootstrap file: which server answers for a TLD, and its refresh."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.live_server import clean_env, run_cli
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.probes.domain import DomainConfig, LookupSettings, probe_domain
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.rdap import (
    PACKAGED_BOOTSTRAP,
    BootstrapInvalid,
    load_bootstrap,
    parse_bootstrap,
    refresh_bootstrap,
    refreshed_path,
)
from upwatch.probes.whois import parse_whois

LENIENT = NetworkGuard(allow_private=True)
NOW = datetime.now(UTC)
WARNINGS = (30, 14, 7)


def rdap_domain(name: str, expires: datetime) -> dict[str, Any]:
    """A domain object as registries answer it (RFC 9083), trimmed to what matters."""
    return {
        "objectClassName": "domain",
        "ldhName": name.upper(),
        "rdapConformance": ["rdap_level_0", "icann_rdap_response_profile_0"],
        "status": ["client transfer prohibited"],
        "events": [
            {"eventAction": "registration", "eventDate": "1995-08-14T04:00:00Z"},
            {"eventAction": "expiration", "eventDate": expires.strftime("%Y-%m-%dT%H:%M:%SZ")},
            {"eventAction": "last update of RDAP database", "eventDate": "2026-11-27T00:00:00Z"},
        ],
        "entities": [
            {
                "objectClassName": "entity",
                "handle": "376",
                "roles": ["registrar"],
                "vcardArray": [
                    "vcard",
                    [
                        ["version", {}, "text", "4.0"],
                        ["fn", {}, "text", "RESERVED-Internet Assigned Numbers Authority"],
                    ],
                ],
            }
        ],
    }


class Registry:
    """An RDAP server: each domain answers what the test set (404 when not set)."""

    def __init__(self) -> None:
        self.answers: dict[str, dict[str, Any] | None] = {}
        self.asked: list[str] = []
        self.release = asyncio.Event()

    def expires(self, name: str, when: datetime) -> None:
        self.answers[name] = rdap_domain(name, when)

    def hangs(self, name: str) -> None:
        self.answers[name] = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        self.asked.append(name)
        if name not in self.answers:
            return web.json_response({"errorCode": 404, "title": "Not Found"}, status=404)
        answer = self.answers[name]
        if answer is None:
            await self.release.wait()
            return web.Response(status=503)
        return web.json_response(answer, content_type="application/rdap+json")


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}/"


@pytest.fixture
async def registry() -> AsyncIterator[tuple[Registry, str]]:
    found = Registry()
    app = web.Application()
    app.router.add_get("/rdap/domain/{name}", found.handle)
    app.router.add_get("/broken/domain/{name}", _broken)
    runner, url = await serve(app)
    yield found, url + "rdap/"
    found.release.set()
    await runner.cleanup()


async def _broken(_request: web.Request) -> web.Response:
    return web.Response(status=500, text="internal error")


@pytest.fixture
async def kit() -> AsyncIterator[ProbeKit]:
    session = guarded_session(LENIENT)
    yield ProbeKit(guard=LENIENT, http=session)
    await session.close()


Check = Callable[..., Awaitable[Outcome]]


@pytest.fixture
def check(kit: ProbeKit, tmp_path: Path) -> Check:
    async def run(
        domain: str,
        base_url: str | None = None,
        whois: tuple[str, int] | None = None,
        timeout_seconds: float = 5.0,
    ) -> Outcome:
        settings = LookupSettings(
            rdap_base_url=base_url,
            whois_server=whois[0] if whois else None,
            whois_port=whois[1] if whois else 43,
            data_dir=tmp_path,
        )
        return await probe_domain(domain, WARNINGS, timeout_seconds, kit, NOW, settings)

    return run


async def test_a_domain_far_from_expiry_is_up_with_its_expiry_and_registrar(
    registry: tuple[Registry, str], check: Check
) -> None:
    server, url = registry
    server.expires("example.com", NOW + timedelta(days=300, hours=1))

    outcome = await check("example.com", url)

    assert outcome.ok
    assert outcome.details["daysToExpiry"] == 300
    assert outcome.details["source"] == "rdap"
    assert outcome.details["registrar"] == "RESERVED-Internet Assigned Numbers Authority"
    assert str(outcome.details["expiresAt"]).endswith("Z")
    assert outcome.timings is not None
    assert outcome.timings.total_ms is not None


async def test_a_domain_close_to_expiry_fails_under_the_largest_warning(
    registry: tuple[Registry, str], check: Check
) -> None:
    server, url = registry
    server.expires("example.com", NOW + timedelta(days=20, hours=1))

    outcome = await check("example.com", url)

    assert not outcome.ok
    assert not outcome.inconclusive
    assert outcome.error_kind is ErrorKind.DOMAIN_EXPIRY
    assert outcome.error is not None
    assert "expires in 20 days" in outcome.error
    assert "under 30" in outcome.error
    assert outcome.details["threshold"] == 30


async def test_an_expired_domain_is_down_saying_how_long_ago(
    registry: tuple[Registry, str], check: Check
) -> None:
    server, url = registry
    server.expires("example.com", NOW - timedelta(days=3, hours=1))

    outcome = await check("example.com", url)

    assert not outcome.ok
    assert not outcome.inconclusive
    assert outcome.error_kind is ErrorKind.DOMAIN_EXPIRY
    assert outcome.error is not None
    assert "the registration of example.com expired 4 days ago" in outcome.error


async def test_a_domain_the_registry_does_not_know_is_down(
    registry: tuple[Registry, str], check: Check
) -> None:
    _server, url = registry

    outcome = await check("unregistered-name.com", url)

    assert not outcome.ok
    assert not outcome.inconclusive
    assert outcome.error_kind is ErrorKind.DOMAIN_NOT_FOUND
    assert outcome.error == "the registry does not know unregistered-name.com (RDAP answered 404)"


async def test_a_registry_error_is_inconclusive_not_down(
    registry: tuple[Registry, str], check: Check
) -> None:
    _server, url = registry

    outcome = await check("example.com", url.replace("/rdap/", "/broken/"))

    assert not outcome.ok
    assert outcome.inconclusive
    assert outcome.error_kind is ErrorKind.DOMAIN_LOOKUP
    assert outcome.error == "no answer about example.com: the RDAP server answered HTTP 500"


async def test_a_registry_that_does_not_answer_in_time_is_inconclusive(
    registry: tuple[Registry, str], check: Check
) -> None:
    server, url = registry
    server.hangs("example.com")

    outcome = await check("example.com", url, timeout_seconds=0.3)

    assert outcome.inconclusive
    assert outcome.error_kind is ErrorKind.DOMAIN_LOOKUP
    assert outcome.error is not None
    assert "did not answer about example.com: no answer within 0.3s" in outcome.error


async def test_a_stopped_registry_is_inconclusive(check: Check) -> None:
    outcome = await check("example.com", "http://127.0.0.1:9/rdap/")

    assert outcome.inconclusive
    assert outcome.error_kind is ErrorKind.DOMAIN_LOOKUP


def bootstrap_document(publication: str, services: list[list[list[str]]]) -> bytes:
    return json.dumps(
        {"version": "1.0", "publication": publication, "description": "t", "services": services}
    ).encode()


def test_the_packaged_bootstrap_names_the_server_of_common_tlds() -> None:
    packaged = parse_bootstrap(PACKAGED_BOOTSTRAP.read_bytes())

    assert packaged.base_url("example.com") == "https://rdap.verisign.com/com/v1/"
    assert packaged.base_url("WWW.Example.DEV") == "https://pubapi.registry.google/rdap/"
    assert packaged.base_url("example.co.uk") == "https://rdap.nominet.uk/uk/"
    assert packaged.base_url("example.invalid") is None


def test_the_bootstrap_prefers_the_longest_suffix_and_https() -> None:
    found = parse_bootstrap(
        bootstrap_document(
            "2026-01-01T00:00:00Z",
            [
                [["uk"], ["https://uk.example/"]],
                [["co.uk"], ["http://plain.example/", "https://co-uk.example"]],
            ],
        )
    )

    assert found.base_url("shop.co.uk") == "https://co-uk.example/"
    assert found.base_url("shop.org.uk") == "https://uk.example/"


async def test_a_lookup_goes_to_the_server_the_bootstrap_names_for_the_tld(
    registry: tuple[Registry, str], check: Check, tmp_path: Path
) -> None:
    server, url = registry
    server.expires("example.zz", NOW + timedelta(days=100, hours=1))
    refreshed_path(tmp_path).write_bytes(
        bootstrap_document("2099-01-01T00:00:00Z", [[["zz"], [url]]])
    )

    outcome = await check("example.zz")

    assert outcome.ok
    assert server.asked == ["example.zz"]


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture
async def iana() -> AsyncIterator[tuple[dict[str, web.Response], str]]:
    """A server for the bootstrap file: each path answers what the test set."""
    files: dict[str, web.Response] = {}

    async def handle(request: web.Request) -> web.Response:
        return files.get(request.path, web.Response(status=404))

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner, url = await serve(app)
    yield files, url
    await runner.cleanup()


async def test_a_refresh_replaces_the_bootstrap_in_the_data_directory(
    iana: tuple[dict[str, web.Response], str], tmp_path: Path
) -> None:
    files, url = iana
    newer = bootstrap_document("2099-01-01T00:00:00Z", [[["zz"], ["https://rdap.zz.example/"]]])
    files["/rdap/dns.json"] = web.Response(body=newer, content_type="application/json")

    async with guarded_session(LENIENT) as session:
        await refresh_bootstrap(session, url + "rdap/dns.json", tmp_path)

    assert refreshed_path(tmp_path).read_bytes() == newer
    assert load_bootstrap(tmp_path).base_url("example.zz") == "https://rdap.zz.example/"
    # No temporary file is left beside it.
    assert files_in(tmp_path) == ["rdap_bootstrap.json"]


@pytest.mark.parametrize(
    "answer",
    [
        web.Response(status=500),
        web.Response(body=b'{"services": [[["zz"], ["https://half', content_type="text/plain"),
        web.Response(body=b'{"publication": "2099-01-01T00:00:00Z", "services": 3}'),
    ],
    ids=["an error", "a truncated file", "another shape"],
)
async def test_a_broken_download_keeps_the_old_bootstrap(
    iana: tuple[dict[str, web.Response], str], tmp_path: Path, answer: web.Response
) -> None:
    files, url = iana
    old = bootstrap_document("2098-01-01T00:00:00Z", [[["zz"], ["https://old.example/"]]])
    refreshed_path(tmp_path).write_bytes(old)
    files["/dns.json"] = answer

    async with guarded_session(LENIENT) as session:
        with pytest.raises(BootstrapInvalid):
            await refresh_bootstrap(session, url + "dns.json", tmp_path)

    assert refreshed_path(tmp_path).read_bytes() == old
    assert files_in(tmp_path) == ["rdap_bootstrap.json"]


def test_a_refreshed_bootstrap_older_than_the_packaged_one_is_not_used(tmp_path: Path) -> None:
    refreshed_path(tmp_path).write_bytes(
        bootstrap_document("2001-01-01T00:00:00Z", [[["com"], ["https://stale.example/"]]])
    )

    assert load_bootstrap(tmp_path).base_url("example.com") == "https://rdap.verisign.com/com/v1/"


GTLD_WHOIS = """\
Domain Name: EXAMPLE.ZZ
Registry Domain ID: 2336799_DOMAIN_ZZ-VRSN
Registrar WHOIS Server: whois.example-registrar.zz
Updated Date: 2026-08-14T07:01:38Z
Creation Date: 1995-08-14T04:00:00Z
Registry Expiry Date: {expiry}
Registrar: Example Registrar, Inc.
Domain Status: clientTransferProhibited https://icann.org/epp#clientTransferProhibited
>>> Last update of whois database: 2026-11-27T00:00:00Z <<<
"""


@pytest.fixture
async def whois() -> AsyncIterator[tuple[dict[str, str], list[str], int]]:
    """A WHOIS server (RFC 3912): reads one line, writes the answer set for it, hangs up."""
    answers: dict[str, str] = {}
    asked: list[str] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        name = (await reader.readline()).decode().strip()
        asked.append(name)
        writer.write(answers.get(name, f'No match for "{name.upper()}".\r\n').encode())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    yield answers, asked, server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()


async def test_a_tld_without_rdap_is_asked_by_whois(
    whois: tuple[dict[str, str], list[str], int], check: Check
) -> None:
    answers, asked, port = whois
    expiry = (NOW + timedelta(days=200, hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    answers["example.zz"] = GTLD_WHOIS.format(expiry=expiry).replace("\n", "\r\n")

    outcome = await check("example.zz", whois=("127.0.0.1", port))

    assert outcome.ok
    assert asked == ["example.zz"]
    assert outcome.details["source"] == "whois"
    assert outcome.details["daysToExpiry"] == 200
    assert outcome.details["registrar"] == "Example Registrar, Inc."


async def test_a_domain_whois_does_not_match_is_down(
    whois: tuple[dict[str, str], list[str], int], check: Check
) -> None:
    _answers, _asked, port = whois

    outcome = await check("unregistered.zz", whois=("127.0.0.1", port))

    assert outcome.error_kind is ErrorKind.DOMAIN_NOT_FOUND
    assert not outcome.inconclusive


async def test_a_stopped_whois_server_is_inconclusive(check: Check) -> None:
    outcome = await check("example.zz", whois=("127.0.0.1", 9))

    assert outcome.inconclusive
    assert outcome.error is not None
    assert "the WHOIS server did not answer about example.zz: cannot connect" in outcome.error


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Registry Expiry Date: 2027-08-13T04:00:00Z", datetime(2027, 8, 13, 4, tzinfo=UTC)),
        ("Expiry Date: 2027-08-13T04:00:00.0Z", datetime(2027, 8, 13, 4, tzinfo=UTC)),
        ("paid-till:     2027-08-13T21:00:00Z", datetime(2027, 8, 13, 21, tzinfo=UTC)),
        ("   Expiration Date: 13-Aug-2027", datetime(2027, 8, 13, tzinfo=UTC)),
        ("expire: 2027.08.13", datetime(2027, 8, 13, tzinfo=UTC)),
    ],
)
def test_whois_expiry_lines_are_read_as_registries_write_them(
    line: str, expected: datetime
) -> None:
    found = parse_whois(f"domain: example.zz\n{line}\nstatus: ok\n", "example.zz")

    assert found.expires_at == expected


def test_a_whois_answer_without_an_expiry_has_none() -> None:
    found = parse_whois("Domain: example.de\nStatus: connect\n", "example.de")

    assert found.expires_at is None


async def test_a_whois_answer_without_an_expiry_is_inconclusive(
    whois: tuple[dict[str, str], list[str], int], check: Check
) -> None:
    answers, _asked, port = whois
    answers["example.zz"] = "Domain: example.zz\r\nStatus: connect\r\n"

    outcome = await check("example.zz", whois=("127.0.0.1", port))

    assert outcome.inconclusive
    assert outcome.error == "the registry's answer gives no expiry date for example.zz"


@pytest.mark.parametrize("host", ["localhost", "203.0.113.7", "-bad.com", "a..com", "com."])
def test_a_host_that_cannot_be_a_registered_domain_is_refused(host: str) -> None:
    with pytest.raises(ValueError, match=r"domain name|label"):
        DomainConfig.model_validate({"host": host})


def test_a_registered_domain_with_a_final_dot_is_accepted() -> None:
    assert DomainConfig.model_validate({"host": "example.co.uk."}).warningDays == [30, 14, 7]


async def test_upwatch_rdap_refresh_saves_the_file_in_the_data_directory_or_keeps_the_old(
    iana: tuple[dict[str, web.Response], str], tmp_path: Path
) -> None:
    files, url = iana
    newer = bootstrap_document("2099-01-01T00:00:00Z", [[["zz"], ["https://rdap.zz.example/"]]])
    files["/dns.json"] = web.Response(body=newer, content_type="application/json")
    data = tmp_path / "data"
    env = clean_env(UPWATCH_DATA_DIR=str(data), UPWATCH_RDAP_BOOTSTRAP_URL=url + "dns.json")

    saved = await asyncio.to_thread(run_cli, tmp_path, env, "rdap-refresh")
    broken = await asyncio.to_thread(
        run_cli, tmp_path, env, "rdap-refresh", "--url", url + "missing.json"
    )

    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.startswith("RDAP bootstrap of 2099-01-01T00:00:00+00:00 saved in ")
    assert broken.returncode == 1
    assert "the RDAP bootstrap was not refreshed" in broken.stderr
    assert "answered HTTP 404" in broken.stderr
    assert refreshed_path(data).read_bytes() == newer
