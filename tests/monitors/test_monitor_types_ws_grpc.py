"""The websocket and grpc monitor types end to end: made through the API, the console form and
``upwatch apply``, and checked against real servers on loopback."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc.aio
import httpx
import pytest
from aiohttp import web
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer

from tests.app_settings import fixture_value, overriding
from tests.client.test_apply_live import Project
from tests.conftest import Cast, assert_problem
from tests.console.forms import signed_in, submit
from tests.factories import FAST_PLANS, create_monitor, post_in_project


@pytest.fixture
def plans_file(tmp_path: Path) -> Path:
    path = tmp_path / "plans.toml"
    path.write_text(FAST_PLANS)
    return path


settings_overrides = overriding(allow_private_targets=True, plans_file=fixture_value("plans_file"))


class EchoServer:
    """An aiohttp WebSocket server on loopback answering each text message with itself."""

    def __init__(self) -> None:
        self.runner: web.AppRunner | None = None
        self.port = 0
        self.authorization: str | None = None  # the last handshake's

    async def echo(self, request: web.Request) -> web.WebSocketResponse:
        self.authorization = request.headers.get("Authorization")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for message in ws:
            if message.type is aiohttp.WSMsgType.TEXT:
                await ws.send_str(message.data)
        return ws

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/echo", self.echo)
        self.runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self.runner.addresses[0][1])

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


@pytest.fixture
async def echo() -> AsyncIterator[EchoServer]:
    server = EchoServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def health() -> AsyncIterator[tuple[grpc.aio.Server, int, HealthServicer]]:
    """A grpcio server on loopback with the health service; ``shop.Orders`` is serving."""
    server = grpc.aio.server()
    servicer = HealthServicer()
    await servicer.set("shop.Orders", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield server, port, servicer
    await server.stop(None)


async def _check(client: httpx.AsyncClient, cast: Cast, monitor_id: str) -> dict[str, Any]:
    answer = await client.post(f"/monitors/{monitor_id}/check", headers=cast.alice.headers)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


async def test_a_websocket_monitor_is_up_on_the_expected_reply_and_down_once_stopped(
    client: httpx.AsyncClient, cast: Cast, echo: EchoServer
) -> None:
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        type="websocket",
        url=f"ws://127.0.0.1:{echo.port}/echo",
        message="ping",
        expectReply="^ping$",
        intervalSeconds=3600,
    )
    assert (monitor["message"], monitor["expectReply"]) == ("ping", "^ping$")

    up = await _check(client, cast, monitor["id"])
    assert up["status"] == "up", up

    await echo.stop()
    down = await _check(client, cast, monitor["id"])
    assert (down["status"], down["errorKind"]) == ("down", "connect")


async def test_a_websocket_monitors_headers_go_with_the_handshake_and_are_masked(
    client: httpx.AsyncClient, cast: Cast, echo: EchoServer
) -> None:
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        type="websocket",
        url=f"ws://127.0.0.1:{echo.port}/echo",
        headers={"Authorization": "Bearer s3cret"},
        intervalSeconds=3600,
    )
    assert monitor["headers"]["Authorization"] != "Bearer s3cret"

    assert (await _check(client, cast, monitor["id"]))["status"] == "up"
    assert echo.authorization == "Bearer s3cret"


async def test_a_websocket_monitor_refuses_an_http_url_and_a_broken_pattern(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    body = {"name": "Socket", "type": "websocket", "intervalSeconds": 3600}
    http = await post_in_project(
        client, cast.alice, cast.project_id, "/monitors", url="http://127.0.0.1/", **body
    )
    assert_problem(http, 422)
    assert "url" in http.text
    broken = await post_in_project(
        client,
        cast.alice,
        cast.project_id,
        "/monitors",
        url="ws://127.0.0.1/",
        expectReply="(unclosed",
        **body,
    )
    assert_problem(broken, 422)
    assert "expectReply" in broken.text


async def test_a_grpc_monitor_is_up_while_serving_and_down_once_stopped(
    client: httpx.AsyncClient,
    cast: Cast,
    health: tuple[grpc.aio.Server, int, HealthServicer],
) -> None:
    server, port, servicer = health
    monitor = await create_monitor(
        client,
        cast.alice,
        cast.project_id,
        type="grpc",
        host="127.0.0.1",
        port=port,
        service="shop.Orders",
        intervalSeconds=3600,
    )
    assert (monitor["service"], monitor["tls"]) == ("shop.Orders", False)

    up = await _check(client, cast, monitor["id"])
    assert up["status"] == "up", up

    await servicer.set("shop.Orders", health_pb2.HealthCheckResponse.NOT_SERVING)
    unhealthy = await _check(client, cast, monitor["id"])
    assert (unhealthy["status"], unhealthy["errorKind"]) == ("down", "unhealthy")
    assert unhealthy["error"] == "service 'shop.Orders' reports NOT_SERVING"

    await server.stop(None)
    down = await _check(client, cast, monitor["id"])
    assert (down["status"], down["errorKind"]) == ("down", "connect")


async def test_the_console_form_makes_a_websocket_and_a_grpc_monitor(
    client: httpx.AsyncClient, cast: Cast
) -> None:
    csrf = await signed_in(client, cast.alice.email)
    boxes = {
        "websocket": {"url": "wss://127.0.0.1:9/socket", "message": "hi", "expectReply": "hi"},
        "grpc": {"host": "127.0.0.1", "port": "9", "service": "shop.Orders", "tls": "true"},
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
        stored = (
            await client.get(f"/monitors/{found.group(1)}", headers=cast.alice.headers)
        ).json()
        assert stored["type"] == kind
        shown = {name: stored[name] for name in fields}
        expected = {name: int(v) if name == "port" else v for name, v in fields.items()}
        if kind == "grpc":
            expected["tls"] = True
        assert shown == expected


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Any:
    made = Project(tmp_path_factory.mktemp("apply-ws-grpc"))
    yield made
    made.api.close()
    made.server.stop()


def test_upwatch_apply_creates_a_websocket_and_a_grpc_monitor_and_a_second_changes_nothing(
    live: Project,
) -> None:
    document = {
        "version": 1,
        "monitors": [
            {
                "key": "socket",
                "name": "Socket",
                "type": "websocket",
                "url": "wss://127.0.0.1:9/socket",
                "message": "ping",
                "expectReply": "^pong$",
                "headers": {"Authorization": {"env": "API_TOKEN"}},
                "intervalSeconds": 300,
            },
            {
                "key": "orders",
                "name": "Orders",
                "type": "grpc",
                "host": "127.0.0.1",
                "port": 50051,
                "service": "shop.Orders",
                "tls": True,
                "intervalSeconds": 300,
            },
        ],
    }

    first = live.apply(document)

    assert "Plan: 2 to create, 0 to update, 0 to replace, 0 to delete, 0 unchanged." in first
    monitors = live.state()["monitors"]
    assert (monitors["socket"]["type"], monitors["socket"]["expectReply"]) == (
        "websocket",
        "^pong$",
    )
    assert (monitors["orders"]["service"], monitors["orders"]["tls"]) == ("shop.Orders", True)
    second = live.apply(document)
    assert "Plan: 0 to create, 0 to update, 0 to replace, 0 to delete, 2 unchanged." in second
