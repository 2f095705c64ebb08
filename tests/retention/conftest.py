"""What the retention tests share: a Monday on the manual clock, monitors of real local
servers, the job, and reads of what the job left."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.message import Message
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from tests.app_settings import overriding
from tests.conftest import Account, Mailbox
from tests.factories import Target, create_monitor, ingest, log_in
from upwatch.kit.clock import ManualClock
from upwatch.kit.db import Database
from upwatch.models import CheckResult
from upwatch.models.keys import monitor_number
from upwatch.retention.job import RetentionJob
from upwatch.runtime import Runtime

MONDAY = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SUBJECT = "is deleted on"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(MONDAY)


# Monitors check the test's own HTTP server, so the days the clock moves on are real.
settings_overrides = overriding(allow_private_targets=True)


def job_of(runtime: Runtime, database: Database | None = None) -> RetentionJob:
    return RetentionJob(
        runtime.settings,
        database or runtime.db,
        runtime.clock,
        runtime.metrics,
        runtime.mailer,
        runtime.catalog,
    )


async def count(runtime: Runtime, query: Any) -> int:
    async with runtime.db.readsession() as session:
        return int(await session.scalar(query) or 0)


async def old_results(runtime: Runtime, monitor_id: str) -> int:
    """Results stored before the first run (the ones the test ingested into the past)."""
    return await count(
        runtime,
        select(func.count())
        .select_from(CheckResult)
        .where(
            CheckResult.monitor_number == monitor_number(monitor_id),
            CheckResult.checked_at < MONDAY,
        ),
    )


async def headers_of(client: httpx.AsyncClient, account: Account) -> dict[str, str]:
    """A fresh access token: the manual clock moves past the last one's lifetime."""
    response = await log_in(client, account.email, account.password)
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


async def notices(client: httpx.AsyncClient, account: Account) -> list[dict[str, Any]]:
    headers = await headers_of(client, account)
    response = await client.get("/retention/notifications", headers=headers)
    assert response.status_code == 200, response.text
    body: list[dict[str, Any]] = response.json()
    return body


def notice_mails(mailbox: Mailbox, account: Account) -> list[Message]:
    return [m for m in mailbox.to(account.email) if SUBJECT in str(m["Subject"])]


def text_of(message: Message) -> str:
    body = message.get_payload(decode=True)
    assert isinstance(body, bytes)
    return body.decode()


async def monitor_of(
    client: httpx.AsyncClient, account: Account, project_id: str, target: Target
) -> str:
    monitor = await create_monitor(client, account, project_id, url=target.url, intervalSeconds=300)
    return str(monitor["id"])


async def project_of(client: httpx.AsyncClient, account: Account) -> str:
    response = await client.post("/projects", headers=account.headers, json={"name": "Mine"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def purged(runtime: Runtime, data_type: str) -> float:
    value: float = runtime.metrics.retention_purged.labels(data_type)._value.get()
    return value


async def ingest_old(app: FastAPI, monitor: str, days_ago: list[int]) -> None:
    # A millisecond apart: results are keyed by monitor, region and millisecond.
    for n, days in enumerate(days_ago):
        at = MONDAY - timedelta(days=days, milliseconds=n)
        await ingest(app.state.engine, monitor, at, ok=True)
