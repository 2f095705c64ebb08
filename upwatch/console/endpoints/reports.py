"""SLA and statistics reports of a monitor and of a project, with their CSV download."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/app")
