"""A real HTTP server on loopback that records what alert transports send it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    """Answers every request with ``status``; ``start``/``stop`` may be called repeatedly,
    and a restart keeps the port, so a test can take the receiver down and bring it back."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.status = 200
        self.headers: dict[str, str] = {}  # sent with every answer, e.g. Retry-After
        self.received: list[Received] = []
        self._runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append(
            Received(request.method, request.path, dict(request.headers), await request.read())
        )
        return web.Response(status=self.status, text="ok", headers=self.headers)

    async def start(self) -> Receiver:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def to(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]
