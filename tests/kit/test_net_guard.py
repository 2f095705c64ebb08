"""The network guard: which addresses outbound checks may reach, at save time and at check time.

Nothing here connects anywhere; name resolution is replaced where a test needs a name.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

import pytest

from upwatch.config import Settings
from upwatch.kit.net import (
    ALLOW_PRIVATE_SETTING,
    NetworkGuard,
    ResolutionFailed,
    TargetRefused,
    is_public,
)

STRICT = NetworkGuard(allow_private=False)
LENIENT = NetworkGuard(allow_private=True)

INTERNAL_LITERALS = [
    "127.0.0.1",
    "127.1",
    "2130706433",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",  # noqa: S104
    "224.0.0.1",
    "240.0.0.1",
    "255.255.255.255",
    "::1",
    "[::1]",
    "::",
    "fe80::1",
    "fc00::1",
    "fd12:3456::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "64:ff9b::a9fe:a9fe",
    "2002:7f00:1::",
]

PUBLIC_LITERALS = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:93.184.216.34"]

AddrInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str, tuple[str, int]]


def fake_dns(table: dict[str, list[str]]) -> Callable[..., list[AddrInfo]]:
    """A getaddrinfo that knows only ``table``, so no test depends on the machine's hosts."""

    def getaddrinfo(host: str, port: int, *_args: object, **_kwargs: object) -> list[AddrInfo]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (
                socket.AF_INET6 if ":" in address else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (address, port),
            )
            for address in table[host]
        ]

    return getaddrinfo


@pytest.fixture
def dns_table(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns(table))
    return table


@pytest.mark.parametrize("literal", INTERNAL_LITERALS)
def test_internal_address_literals_are_refused_when_saved(literal: str) -> None:
    with pytest.raises(TargetRefused, match="not a public address"):
        STRICT.check_literal(literal)


@pytest.mark.parametrize("literal", INTERNAL_LITERALS)
async def test_internal_address_literals_are_refused_when_contacted(literal: str) -> None:
    with pytest.raises(TargetRefused):
        await STRICT.resolve(literal, 80)


@pytest.mark.parametrize("literal", PUBLIC_LITERALS)
def test_public_addresses_count_as_public(literal: str) -> None:
    assert is_public(ipaddress.ip_address(literal))
    STRICT.check_literal(literal)


@pytest.mark.parametrize("literal", ["127.0.0.1", "::ffff:127.0.0.1", "100.64.0.1", "ff02::1"])
def test_internal_addresses_do_not_count_as_public(literal: str) -> None:
    assert not is_public(ipaddress.ip_address(literal))


@pytest.mark.parametrize("name", ["localhost", "LOCALHOST.", "app.localhost"])
def test_local_names_are_refused_without_any_lookup(name: str) -> None:
    with pytest.raises(TargetRefused, match="local name"):
        STRICT.check_literal(name)


def test_ordinary_names_wait_for_resolution_before_being_judged() -> None:
    STRICT.check_literal("status.example.com")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/health",
        "https://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
        "http://localhost:3000/",
    ],
)
def test_urls_with_internal_hosts_are_refused(url: str) -> None:
    with pytest.raises(TargetRefused):
        STRICT.check_url(url)


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "file:///etc/passwd", "http:///nohost", "not a url", "https://"]
)
def test_urls_that_are_not_http_with_a_host_are_malformed(url: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 -- the message varies with the defect
        STRICT.check_url(url)


def test_a_public_url_passes_the_shape_check() -> None:
    STRICT.check_url("https://status.example.com:8443/health?full=1")


@pytest.mark.parametrize(
    "url",
    [
        "http://xn--a.com/",  # punycode that does not decode
        "http://xn--a-ecp.com/",  # decodes, but does not encode back the same
        "http://a..b/",
        "http://.example.com/",
        "http://\u2488.com/",  # "1." once normalised: an empty label
        f"http://{'a' * 64}.com/",
        f"http://{'a.' * 127}com/",
        "http://ex%41mple.com/",
    ],
)
def test_a_url_whose_host_is_no_domain_name_is_malformed_even_where_all_is_allowed(
    url: str,
) -> None:
    for guard in (STRICT, LENIENT):
        with pytest.raises(ValueError, match=r"^the host "):
            guard.check_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://\u4f8b\u3048.jp/",
        "http://xn--ls8h.la/",
        "http://_dmarc.example.com/",
        "http://example.com./",
        f"http://{'a' * 63}.com/",
        "http://[2606:4700::1111]/",
    ],
)
def test_internationalised_and_unusual_but_valid_hosts_pass_the_shape_check(url: str) -> None:
    STRICT.check_url(url)


async def test_a_name_resolving_to_a_private_address_is_refused(
    dns_table: dict[str, list[str]],
) -> None:
    dns_table["intranet.example.com"] = ["10.0.0.5"]
    with pytest.raises(TargetRefused, match=r"intranet\.example\.com \(10\.0\.0\.5\)"):
        await STRICT.resolve("intranet.example.com", 443)


async def test_a_name_with_one_private_address_among_public_ones_is_refused(
    dns_table: dict[str, list[str]],
) -> None:
    dns_table["mixed.example.com"] = ["93.184.216.34", "127.0.0.1"]
    with pytest.raises(TargetRefused, match="loopback"):
        await STRICT.resolve("mixed.example.com", 443)


async def test_a_name_resolving_to_public_addresses_yields_them_once_each(
    dns_table: dict[str, list[str]],
) -> None:
    dns_table["www.example.com"] = ["93.184.216.34", "2606:2800:220:1::1", "93.184.216.34"]
    assert await STRICT.resolve("www.example.com", 443) == [
        "93.184.216.34",
        "2606:2800:220:1::1",
    ]


async def test_localhost_is_refused_when_contacted() -> None:
    with pytest.raises(TargetRefused):
        await STRICT.resolve("localhost", 80)


async def test_a_name_that_does_not_resolve_is_a_resolution_failure(
    dns_table: dict[str, list[str]],
) -> None:
    with pytest.raises(ResolutionFailed, match=r"nowhere\.example\.com"):
        await STRICT.resolve("nowhere.example.com", 80)


async def test_everything_is_allowed_when_private_targets_are_allowed(
    dns_table: dict[str, list[str]],
) -> None:
    dns_table["intranet.example.com"] = ["10.0.0.5"]
    LENIENT.check_url("http://127.0.0.1:8080/")
    LENIENT.check_literal("localhost")
    assert await LENIENT.resolve("intranet.example.com", 80) == ["10.0.0.5"]
    assert await LENIENT.resolve("::1", 80) == ["::1"]


@pytest.mark.parametrize("host", ["10.1.2.3", "localhost", "[::1]"])
def test_a_refusal_names_the_setting_that_lifts_it(host: str) -> None:
    with pytest.raises(TargetRefused, match=f"{ALLOW_PRIVATE_SETTING}=true"):
        STRICT.check_literal(host)


async def test_a_refusal_the_setting_would_not_lift_does_not_name_it() -> None:
    loopback_only = NetworkGuard(allow_private=True, loopback_only=True)
    with pytest.raises(TargetRefused) as refused:
        await loopback_only.resolve("10.1.2.3", 80)
    assert "only loopback targets are reached here" in str(refused.value)
    assert ALLOW_PRIVATE_SETTING not in str(refused.value)


def test_the_setting_named_in_refusals_is_the_one_the_service_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ALLOW_PRIVATE_SETTING, "true")
    assert Settings(_env_file=None).allow_private_targets  # type: ignore[call-arg]
