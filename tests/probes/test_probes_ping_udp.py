"""Ping and UDP probes against loopback: ICMP to 127.0.0.1, a UDP echo server of the test's own."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest

from upwatch.kit.net import NetworkGuard
from upwatch.probes import ping
from upwatch.probes.outcome import ErrorKind
from upwatch.probes.ping import icmp_privileged, probe_ping
from upwatch.probes.udp import probe_udp

ALLOWED = NetworkGuard(allow_private=True)
GUARDED = NetworkGuard(allow_private=False)
# TEST-NET-2 (RFC 5737): reserved for documentation, so nothing there answers. (TEST-NET-1
# may be a container's own gateway.)
SILENT = "198.51.100.7"


class Echo(asyncio.DatagramProtocol):
    """Sends every datagram back, upper-cased so a test can tell a reply from its payload."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        self.transport.sendto(data.upper(), addr)


@pytest.fixture
async def echo_port() -> AsyncIterator[int]:
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
    yield int(transport.get_extra_info("sockname")[1])
    transport.close()


def closed_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_loopback_answers_every_ping_and_is_up() -> None:
    outcome = await probe_ping("127.0.0.1", 3, 0, 5, ALLOWED)

    assert outcome.ok, outcome.error
    assert outcome.details["packetsSent"] == 3
    assert outcome.details["packetsReceived"] == 3
    assert outcome.details["lossPercent"] == 0
    assert outcome.response_time_ms == outcome.details["avgRttMs"]


async def test_an_address_that_never_answers_is_down_with_packet_loss() -> None:
    outcome = await probe_ping(SILENT, 2, 0, 1, ALLOWED)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.PACKET_LOSS
    assert outcome.details["lossPercent"] == 100


async def test_ping_to_loopback_is_refused_when_private_targets_are_not_allowed() -> None:
    outcome = await probe_ping("127.0.0.1", 1, 0, 5, GUARDED)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.REFUSED_TARGET


async def test_without_root_or_a_ping_group_icmp_is_unavailable_with_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    closed = tmp_path / "ping_group_range"
    closed.write_text("1\t0\n")
    monkeypatch.setattr(ping.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(ping, "_PING_GROUP_RANGE", closed)
    monkeypatch.setattr(ping.icmp_privileged, "__defaults__", (closed,))

    outcome = await probe_ping("127.0.0.1", 1, 0, 5, ALLOWED)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.ICMP_UNAVAILABLE
    assert outcome.error == "ICMP needs root or net.ipv4.ping_group_range"


def test_a_ping_group_range_that_covers_our_group_allows_unprivileged_icmp(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    open_range = tmp_path / "ping_group_range"
    open_range.write_text("0\t2147483647\n")
    monkeypatch.setattr(ping.os, "geteuid", lambda: 1000)

    assert icmp_privileged(open_range) is False


async def test_an_echo_server_whose_reply_matches_is_up(echo_port: int) -> None:
    outcome = await probe_udp("127.0.0.1", echo_port, "ping", "^PING$", 5, ALLOWED)

    assert outcome.ok, outcome.error
    assert outcome.details["reply"] == "PING"
    assert outcome.response_time_ms is not None


async def test_a_reply_that_does_not_match_is_down_as_unexpected(echo_port: int) -> None:
    outcome = await probe_udp("127.0.0.1", echo_port, "ping", "^pong$", 5, ALLOWED)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.UNEXPECTED_REPLY
    assert outcome.details["reply"] == "PING"


async def test_a_server_that_never_replies_is_down_with_a_timeout_when_a_reply_is_expected() -> (
    None
):
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(
        asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0)
    )
    port = int(transport.get_extra_info("sockname")[1])
    try:
        outcome = await probe_udp("127.0.0.1", port, "ping", "PING", 0.5, ALLOWED)
    finally:
        transport.close()

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.TIMEOUT
    assert outcome.error == "no reply within 0.5s"


async def test_without_a_pattern_a_listening_port_is_up(echo_port: int) -> None:
    outcome = await probe_udp("127.0.0.1", echo_port, "hello", None, 5, ALLOWED)

    assert outcome.ok, outcome.error


async def test_a_stopped_server_is_down_as_port_unreachable() -> None:
    outcome = await probe_udp("127.0.0.1", closed_udp_port(), "hello", "x", 5, ALLOWED)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.PORT_UNREACHABLE


async def test_without_a_pattern_a_stopped_server_is_still_down_as_port_unreachable() -> None:
    outcome = await probe_udp("127.0.0.1", closed_udp_port(), "hello", None, 5, ALLOWED)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.PORT_UNREACHABLE


async def test_udp_to_loopback_is_refused_when_private_targets_are_not_allowed(
    echo_port: int,
) -> None:
    outcome = await probe_udp("127.0.0.1", echo_port, "ping", None, 5, GUARDED)

    assert not outcome.ok
    assert outcome.error_kind is ErrorKind.REFUSED_TARGET
