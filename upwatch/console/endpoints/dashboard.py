"""The dashboard: the landing page after sign-in (seed 21, 22)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/app")
