"""TCP and DNS probes against a real listening socket and a tiny DNS server on loopback."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import cast

import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest

from upwatch.kit.net import NetworkGuard
from upwatch.probes.dns import probe_dns
from upwatch.probes.outcome import ErrorKind
from upwatch.probes.tcp import probe_tcp

ZONE: dict[tuple[str, str], list[str]] = {
    ("status.upwatch.test.", "A"): ["192.0.2.10", "192.0.2.11"],
    ("status.upwatch.test.", "TXT"): ['"v=spf1 -all"'],
    ("alias.upwatch.test.", "CNAME"): ["Status.Upwatch.Test."],
}


class ZoneServer(asyncio.DatagramProtocol):
    """Answers from ``ZONE``; NXDOMAIN for names it has never heard of."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        query = dns.message.from_wire(data)
        response = dns.message.make_response(query)
        question = query.question[0]
        name = question.name.to_text().lower()
        kind = dns.rdatatype.to_text(question.rdtype)
        if not any(known == name for known, _ in ZONE):
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif (name, kind) in ZONE:
            response.answer.append(
                dns.rrset.from_text(question.name, 300, dns.rdataclass.IN, kind, *ZONE[name, kind])
            )
        self.transport.sendto(response.to_wire(), addr)


@pytest.fixture
async def nameserver() -> AsyncIterator[tuple[str, int]]:
    loop = asyncio.get_running_loop()
    transport, _protocol = await loop.create_datagram_endpoint(
        ZoneServer, local_addr=("127.0.0.1", 0)
    )
    yield transport.get_extra_info("sockname")[:2]
    transport.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_open_port_is_up_with_its_connect_time(open_port: int) -> None:
    outcome = await probe_tcp("127.0.0.1", open_port, 5, NetworkGuard(allow_private=True))

    assert outcome.ok
    assert outcome.response_time_ms is not None
    assert outcome.timings is not None
    assert outcome.timings.connect_ms is not None
    assert outcome.details["address"] == "127.0.0.1"


async def test_a_closed_port_is_down_with_a_connect_failure() -> None:
    outcome = await probe_tcp("127.0.0.1", closed_port(), 5, NetworkGuard(allow_private=True))

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.CONNECT
    assert outcome.error == "cannot connect: connection refused"


async def test_a_loopback_port_is_refused_when_private_targets_are_not_allowed(
    open_port: int,
) -> None:
    outcome = await probe_tcp("127.0.0.1", open_port, 5, NetworkGuard(allow_private=False))

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.REFUSED_TARGET


async def test_a_name_with_records_is_up_and_lists_them(nameserver: tuple[str, int]) -> None:
    outcome = await probe_dns("status.upwatch.test", nameserver=nameserver)

    assert outcome.ok
    assert outcome.details["records"] == ["192.0.2.10", "192.0.2.11"]
    assert outcome.timings is not None
    assert outcome.timings.dns_ms is not None


async def test_an_expected_address_among_the_records_keeps_the_check_up(
    nameserver: tuple[str, int],
) -> None:
    outcome = await probe_dns("status.upwatch.test", expected="192.0.2.11", nameserver=nameserver)

    assert outcome.ok


async def test_an_expected_address_missing_from_the_records_is_a_mismatch(
    nameserver: tuple[str, int],
) -> None:
    outcome = await probe_dns("status.upwatch.test", expected="192.0.2.99", nameserver=nameserver)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.DNS_MISMATCH
    assert outcome.error == "expected 192.0.2.99, got 192.0.2.10, 192.0.2.11"


async def test_expected_names_and_texts_compare_as_their_record_type_reads(
    nameserver: tuple[str, int],
) -> None:
    alias = await probe_dns(
        "alias.upwatch.test", "cname", expected="status.upwatch.test", nameserver=nameserver
    )
    text = await probe_dns(
        "status.upwatch.test", "TXT", expected="v=spf1 -all", nameserver=nameserver
    )

    assert alias.ok
    assert text.ok


async def test_a_name_that_does_not_exist_is_a_dns_failure(nameserver: tuple[str, int]) -> None:
    outcome = await probe_dns("missing.upwatch.test", nameserver=nameserver)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.DNS
    assert outcome.error == "missing.upwatch.test does not exist (NXDOMAIN)"


async def test_a_name_without_records_of_the_type_is_a_dns_failure(
    nameserver: tuple[str, int],
) -> None:
    outcome = await probe_dns("status.upwatch.test", "AAAA", nameserver=nameserver)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.DNS
    assert outcome.error == "status.upwatch.test has no AAAA records"


async def test_a_silent_nameserver_is_a_timeout() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        outcome = await probe_dns(
            "status.upwatch.test", timeout_seconds=0.3, nameserver=silent.getsockname()
        )

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.TIMEOUT


async def test_an_unknown_record_type_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="unknown DNS record type"):
        await probe_dns("status.upwatch.test", "BOGUS")
