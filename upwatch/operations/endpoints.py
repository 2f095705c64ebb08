from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from starlette.requests import Request
from starlette.responses import Response

from upwatch.dependencies import RuntimeDep
from upwatch.kit.errors import ServiceUnavailable, Unauthorized, problem_responses
from upwatch.kit.metrics import metrics_refusal

router = APIRouter(tags=["operations"], responses=problem_responses(400, 500))


class Health(BaseModel):
    status: Literal["ok", "ready"]


@router.get("/healthz", operation_id="healthz")
async def healthz() -> Health:
    """The process is alive."""
    return Health(status="ok")


@router.get("/readyz", operation_id="readyz", responses={503: problem_responses(500)[500]})
async def readyz(runtime: RuntimeDep) -> Health:
    """Ready: the database answers and every background role running in this process made
    progress lately (a role with work that made none for several of its periods is stalled).
    Otherwise 503, and the problem's `detail` says why."""
    reasons = []
    try:
        async with asyncio.timeout(5):
            async with runtime.db.engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
    except (SQLAlchemyError, OSError, TimeoutError) as exc:
        reasons.append(f"the database is not reachable ({type(exc).__name__})")
    reasons += runtime.supervisor.stalled()
    if reasons:
        raise ServiceUnavailable("; ".join(reasons), headers={"Retry-After": "5"})
    return Health(status="ready")


@router.get(
    "/metrics",
    operation_id="metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}},
        **problem_responses(401),
    },
)
async def metrics(request: Request, runtime: RuntimeDep) -> Response:
    """Prometheus text format, behind a bearer token: requests with `Authorization: Bearer
    <UPWATCH_METRICS_TOKEN>` are answered, others get 401. Without a token set, every request
    gets 401, unless the operator opens the metrics to anyone with `UPWATCH_METRICS_PUBLIC=true`
    (a token, when set, is still required). Per monitor, labelled by ids:
    `upwatch_monitor_up{monitor,project}` (1 up or degraded, 0 down),
    `upwatch_monitor_response_seconds{monitor,project}` (the last check's response time),
    `upwatch_monitor_certificate_expiry_timestamp_seconds{monitor,project}` (TLS monitors) and
    `upwatch_monitor_info{monitor,project,name,type,target}` (always 1), from the process that
    stores check results. Role processes serve the same on `UPWATCH_METRICS_PORT`."""
    # Read by hand, not declared as a security scheme: a public scrape needs none, and a
    # declared scheme would tell clients (and the schema-driven tests) that it is required.
    # The header's own bytes (the server reads headers as Latin-1) against the token's UTF-8.
    settings = runtime.settings
    refused = metrics_refusal(
        request.headers.get("Authorization", "").encode("latin-1"),
        settings.metrics_token,
        settings.metrics_public,
    )
    if refused is not None:
        raise Unauthorized(refused)
    return Response(runtime.metrics.render(), media_type=CONTENT_TYPE_LATEST)
