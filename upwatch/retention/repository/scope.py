"""Every retention query is scoped to one owner: through the monitors and projects it owns."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.engine import CursorResult

from upwatch.models import Monitor, Project

# Bulk statements: the rows they touch are never loaded in the session, so nothing to sync.
NO_SYNC = {"synchronize_session": False}


def owner_monitors(owner_id: str) -> Select[Any]:
    return (
        select(Monitor.id)
        .join(Project, Project.id == Monitor.project_id)
        .where(Project.owner_id == owner_id)
    )


def owner_projects(owner_id: str) -> Select[Any]:
    return select(Project.id).where(Project.owner_id == owner_id)


def rowcount(result: object) -> int:
    assert isinstance(result, CursorResult)
    return int(result.rowcount)
