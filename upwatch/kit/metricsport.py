"""``/metrics`` on a port of its own, for the processes that answer no HTTP otherwise: the
distributed roles (``upwatch scheduler``, ``ingester``, ``sender``, ``retention``) and
``upwatch worker``.

A supervised role of the process (``metrics-server``): a port that cannot be bound is logged,
counted in ``upwatch_role_restarts_total`` and tried again with back-off, and the process's
other roles keep running. The same rule as the API's ``/metrics`` (``metrics_refusal``): a
bearer token when ``UPWATCH_METRICS_TOKEN`` is set, else nobody unless
``UPWATCH_METRICS_PUBLIC=true``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.typedefs import Handler
from prometheus_client import CONTENT_TYPE_LATEST

from upwatch.kit.errors import (
    PROBLEM_MEDIA_TYPE,
    MethodNotAllowed,
    NotFound,
    ProblemError,
    Unauthorized,
)
from upwatch.kit.metrics import Metrics, metrics_refusal

if TYPE_CHECKING:
    from upwatch.config import Settings
    from upwatch.kit.supervisor import Supervisor

log = logging.getLogger(__name__)

ROLE = "metrics-server"


def metrics_app(metrics: Metrics, token: str, public: bool) -> web.Application:
    """``GET /metrics`` (and HEAD) under the token rule; any other path is a 404."""

    async def answer(request: web.Request) -> web.Response:
        authorization = b""
        for name, value in request.raw_headers:
            if name.lower() == b"authorization":
                authorization = value
                break
        refused = metrics_refusal(authorization, token, public)
        if refused is not None:
            return _problem(Unauthorized(refused))
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    @web.middleware
    async def problems(request: web.Request, handler: Handler) -> web.StreamResponse:
        # Every error a problem document, as on the API's port (contract §3).
        try:
            return await handler(request)
        except web.HTTPMethodNotAllowed:
            return _problem(MethodNotAllowed("only GET and HEAD"), {"Allow": "GET, HEAD"})
        except web.HTTPNotFound:
            return _problem(NotFound("this port serves /metrics only"))

    app = web.Application(middlewares=[problems])
    app.router.add_get("/metrics", answer)
    return app


def _problem(problem: ProblemError, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=problem.status,
        body=json.dumps(problem.document()).encode(),
        headers={"Content-Type": PROBLEM_MEDIA_TYPE, **problem.headers, **(headers or {})},
    )


async def serve_metrics(metrics: Metrics, host: str, port: int, token: str, public: bool) -> None:
    """Serve until cancelled; a failure to bind raises (the supervisor retries)."""
    runner = web.AppRunner(metrics_app(metrics, token, public), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        log.info("metrics on http://%s:%d/metrics", host, port)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def start_metrics_port(supervisor: Supervisor, metrics: Metrics, settings: Settings) -> None:
    """With ``UPWATCH_METRICS_PORT`` set, serve ``/metrics`` there under ``supervisor``."""
    if not settings.metrics_port:
        return
    supervisor.start(
        ROLE,
        lambda: serve_metrics(
            metrics,
            settings.metrics_host,
            settings.metrics_port,
            settings.metrics_token,
            settings.metrics_public,
        ),
        period_seconds=60.0,
        busy=lambda: False,  # it waits for scrapes: never stalled
    )
