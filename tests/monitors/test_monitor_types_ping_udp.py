"""Ping and UDP monitors through the HTTP API, checked now against loopback targets."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.app_settings import overriding, plans
from tests.conftest import Cast
from tests.factories import create_monitor
from tests.probes.test_probes_ping_udp import SILENT, Echo

settings_overrides = overriding(
    allow_private_targets=True, plans_file=plans("[plans.free]\ncheckFrequencyMinutes = 0\n")
)


async def _check(client: httpx.AsyncClient, cast: Cast, monitor: dict[str, Any]) -> Any:
    checked = await client.post(f"/monitors/{monitor['id']}/check", headers=cast.alice.headers)
    assert checked.status_code == 200, checked.text
    return checked.json()


async def test_a_ping_monitor_is_up_for_loopback_and_down_for_an_address_that_never_answers(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    fields = {"type": "ping", "intervalSeconds": 3600, "timeoutSeconds": 2}
    monitor = await create_monitor(
        client, cast.alice, cast.project_id, host="127.0.0.1", packetCount=2, **fields
    )
    assert monitor["packetCount"] == 2
    assert monitor["maxLossPercent"] == 0
    assert (await _check(client, cast, monitor))["status"] == "up"

    silent = await create_monitor(client, cast.alice, cast.project_id, host=SILENT, **fields)
    assert (await _check(client, cast, silent))["status"] == "down"


async def test_a_udp_monitor_is_up_while_its_echo_server_runs_and_down_once_it_stops(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
    port = int(transport.get_extra_info("sockname")[1])
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        type="udp",
        host="127.0.0.1",
        port=port,
        payload="hello",
        expectReply="^HELLO$",
        intervalSeconds=3600,
    )
    assert monitor["expectReply"] == "^HELLO$"
    assert (await _check(client, cast, monitor))["status"] == "up"

    transport.close()
    assert (await _check(client, cast, monitor))["status"] == "down"


async def test_a_udp_monitor_with_a_pattern_that_does_not_compile_is_refused(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    response = await client.post(
        "/monitors",
        headers=cast.alice.headers,
        json={
            "projectId": cast.project_id,
            "name": "Broken",
            "type": "udp",
            "host": "127.0.0.1",
            "port": 9,
            "expectReply": "(unclosed",
        },
    )
    assert response.status_code == 422, response.text
    assert "expectReply" in response.text
