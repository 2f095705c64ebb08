"""Ping and UDP monitors through the HTTP API, checked now against loopback targets."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx

from tests.app_settings import overriding, plans
from tests.conftest import Cast
from tests.console.forms import signed_in, submit
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


async def test_the_consoles_new_monitor_form_makes_a_ping_and_a_udp_monitor(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    boxes = {
        "ping": {"host": "127.0.0.1", "packetCount": "4", "maxLossPercent": "25"},
        "udp": {"host": "127.0.0.1", "port": "53", "payload": "hi", "expectReply": "^HI"},
    }
    for kind, fields in boxes.items():
        made = await submit(
            client,
            "/app/monitors/new",
            csrf,
            projectId=cast.project_id,
            type=kind,
            name=f"A {kind}",
            intervalSeconds="300",
            **fields,
        )
        assert made.status_code == 303, made.text
        found = re.search(r"/app/monitors/([0-9a-f]{32})$", made.headers["location"])
        assert found
        stored = await client.get(f"/monitors/{found.group(1)}", headers=cast.alice.headers)
        assert stored.json()["type"] == kind
        for name, value in fields.items():
            assert str(stored.json()[name]) in (value, f"{value}.0"), name
