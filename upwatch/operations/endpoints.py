from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from starlette.responses import Response

from upwatch.dependencies import RuntimeDep
from upwatch.kit.errors import ServiceUnavailable, problem_responses

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
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def metrics(runtime: RuntimeDep) -> Response:
    """Prometheus text format."""
    return Response(runtime.metrics.render(), media_type=CONTENT_TYPE_LATEST)
