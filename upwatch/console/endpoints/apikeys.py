"""A project's API keys: create one (its secret shown once), list, revoke."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/app")
