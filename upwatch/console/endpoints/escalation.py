"""Escalation policies: who is paged, in which order, when an incident stays unacknowledged."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/app")
