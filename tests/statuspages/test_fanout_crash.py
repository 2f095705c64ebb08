"""A fan-out killed with SIGKILL mid-way resumes without a duplicate: the real `upwatch serve`
expands a notice to 50,000 subscribers, is killed after some batches have committed, and a
new one finishes the job; every subscriber then has exactly one e-mail in the outbox."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tests import live_server as live
from tests.conftest import PASSWORD, eventually
from upwatch.config import async_database_url
from upwatch.kit.ids import new_id
from upwatch.models import MailMessage, StatusPageSubscriber, SubscriberNotice

SUBSCRIBERS = 50_000
WITHIN = 120.0


@pytest.fixture
async def database(service_env: dict[str, str], tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    """The database the service of ``service_env`` uses (SQLite: ./data under the test's
    directory, made by the first start)."""
    url = service_env.get("UPWATCH_DATABASE_URL") or f"sqlite:///{tmp_path / 'data/upwatch.db'}"
    engine = create_async_engine(async_database_url(url))
    yield engine
    await engine.dispose()


async def counts(database: AsyncEngine) -> tuple[int, int, int, bool]:
    """(notice e-mails, distinct addresses, the notice's count, whether it is done)."""
    async with database.connect() as connection:
        mailed = MailMessage.category == "status_page_notice"
        total = await connection.scalar(select(func.count()).where(mailed))
        distinct = await connection.scalar(
            select(func.count(func.distinct(MailMessage.to_address))).where(mailed)
        )
        notice = (
            await connection.execute(select(SubscriberNotice.delivered, SubscriberNotice.done))
        ).first()
    delivered, done = notice if notice is not None else (0, False)
    return int(total or 0), int(distinct or 0), int(delivered), bool(done)


async def test_a_fanout_killed_with_sigkill_mid_way_resumes_and_each_subscriber_hears_once(
    service_env: dict[str, str], tmp_path: Path, database: AsyncEngine
) -> None:
    env = {
        **service_env,
        # A hundred batches: the kill lands mid-way however fast the machine is.
        "UPWATCH_SUBSCRIBER_FANOUT_BATCH": "500",
        # A lapsed claim is taken over soon: the killed process held one.
        "UPWATCH_SUBSCRIBER_FANOUT_CLAIM_SECONDS": "2",
        "UPWATCH_MAIL_POLL_SECONDS": "0.2",
        "UPWATCH_ROLE_RESTART_MAX_SECONDS": "2",
        "UPWATCH_ADMIN_PASSWORD": PASSWORD,
    }
    first = live.LiveServer(tmp_path, env).start()
    try:
        live.create_root(tmp_path, env)
        async with httpx.AsyncClient(base_url=first.url, timeout=30) as api:
            headers = await live.log_in_as_root(api, PASSWORD)
            project = (await api.post("/projects", headers=headers, json={"name": "Shop"})).json()
            monitor = await api.post(
                "/monitors",
                headers=headers,
                json={
                    "projectId": project["id"],
                    "name": "Checkout",
                    "type": "http",
                    "url": "https://checkout.example/",
                    "intervalSeconds": 300,
                    "isActive": False,
                },
            )
            assert monitor.status_code == 201, monitor.text
            page = await api.post(
                "/status-pages",
                headers=headers,
                json={"projectId": project["id"], "name": "Shop", "slug": "shop"},
            )
            assert page.status_code == 201, page.text
            component = await api.post(
                f"/status-pages/{page.json()['id']}/components",
                headers=headers,
                json={"monitorId": monitor.json()["id"]},
            )
            assert component.status_code == 201, component.text
            now = datetime.now(UTC)
            async with database.begin() as connection:
                rows = [
                    {
                        "id": new_id(),
                        "status_page_id": page.json()["id"],
                        "kind": "email",
                        "email": f"visitor-{n}@example.org",
                        "created_at": now,
                        "confirmed_at": now,
                    }
                    for n in range(SUBSCRIBERS)
                ]
                await connection.execute(insert(StatusPageSubscriber), rows)
            opened = await api.post(
                "/incidents",
                headers=headers,
                json={
                    "projectId": project["id"],
                    "monitorId": monitor.json()["id"],
                    "title": "Card payments fail",
                },
            )
            assert opened.status_code == 201, opened.text

        async def some_batches_committed() -> bool:
            _, _, delivered, done = await counts(database)
            assert not done, "the fan-out ended before it could be killed"
            return delivered >= 2000

        await eventually(some_batches_committed, WITHIN)
        assert first.process is not None
        first.process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(first.process.wait)
    finally:
        first.stop()

    # What committed is whole: each batch's e-mails and the cursor moved together.
    total, distinct, delivered, done = await counts(database)
    assert not done
    assert total == distinct == delivered < SUBSCRIBERS

    second = live.LiveServer(tmp_path, env).start()
    try:

        async def finished() -> bool:
            return (await counts(database))[3]

        await eventually(finished, WITHIN)
    finally:
        second.stop()
    assert await counts(database) == (SUBSCRIBERS, SUBSCRIBERS, SUBSCRIBERS, True)
