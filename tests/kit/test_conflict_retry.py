"""A request that concurrent writes defeated is run again by the boundary, whole."""

from __future__ import annotations

from typing import Any

import asyncpg
import httpx
import pytest

from tests.app_settings import overriding
from tests.conftest import Cast, InProject, assert_problem
from upwatch.kit.db import busy
from upwatch.kit.errors import DatabaseBusy
from upwatch.monitors.service import MonitorService

BODY = {"name": "Shop", "type": "http", "url": "https://example.com", "intervalSeconds": 300}


settings_overrides = overriding(conflict_retries=3, conflict_retry_seconds=0.001)


def conflicts(monkeypatch: pytest.MonkeyPatch, times: int) -> list[int]:
    """Make the first ``times`` monitor creations fail as a deadlock would, after their
    insert; counts attempts."""
    create = MonitorService.create
    attempts: list[int] = []

    async def failing(self: MonitorService, *args: Any) -> Any:
        attempts.append(1)
        monitor = await create(self, *args)
        if len(attempts) <= times:
            raise DatabaseBusy("deadlock detected (injected)")
        return monitor

    monkeypatch.setattr(MonitorService, "create", failing)
    return attempts


async def test_a_request_defeated_by_a_conflict_is_run_again_and_succeeds_once(
    client: httpx.AsyncClient, cast: Cast, as_alice: InProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts = conflicts(monkeypatch, times=2)
    created = await as_alice.post("/monitors", **BODY)
    assert created.status_code == 201, created.text
    assert len(attempts) == 3
    listed = await client.get(f"/monitors?projectId={cast.project_id}", headers=cast.alice.headers)
    assert [m["name"] for m in listed.json()] == ["Shop"]  # the failed attempts left nothing


async def test_a_conflict_that_outlasts_every_retry_answers_503_busy(
    as_alice: InProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts = conflicts(monkeypatch, times=10)
    answer = await as_alice.post("/monitors", **BODY)
    problem = assert_problem(answer, 503)
    assert problem["detail"] == "the database is busy with other writes; try again in a moment"
    assert answer.headers["Retry-After"] == "1"
    assert len(attempts) == 4  # the first and three retries


def test_postgresql_deadlocks_and_serialization_failures_count_as_busy_not_as_bugs() -> None:
    assert busy(asyncpg.exceptions.DeadlockDetectedError("deadlock detected"))
    assert busy(asyncpg.exceptions.SerializationError("could not serialize access"))
    assert not busy(asyncpg.exceptions.UniqueViolationError("duplicate key"))
