"""The subscriber fan-out at 50,000 subscribers: the incident's transaction writes one small
notice whatever the page's audience, and the fan-out after the commit gives every subscriber
exactly one e-mail. Without SMTP here: the notices wait in the outbox, where they are counted.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event, func, insert, select

from tests.app_settings import overriding
from tests.conftest import Account, eventually
from tests.factories import add_component, create_monitor, create_page
from upwatch.incidents.schemas import IncidentCreate
from upwatch.incidents.service import IncidentService
from upwatch.kit.clock import ManualClock
from upwatch.kit.db import commit_and_notify
from upwatch.kit.ids import new_id
from upwatch.models import MailMessage, StatusPageSubscriber, SubscriberNotice, User
from upwatch.runtime import Runtime
from upwatch.statuspages.fanout import Fanout

SUBSCRIBERS = 50_000
# The fan-out at this scale may take a while on a loaded machine (about 10 s alone).
WITHIN = 120.0

settings_overrides = overriding(smtp_host="")


async def page_with_subscribers(
    client: httpx.AsyncClient, runtime: Runtime, owner: Account, count: int
) -> tuple[str, str]:
    """A page showing one monitor, and ``count`` confirmed e-mail subscribers inserted in
    bulk; (project id, monitor id)."""
    created = await client.post("/projects", headers=owner.headers, json={"name": "Shop"})
    project_id = created.json()["id"]
    monitor = await create_monitor(
        client, owner, project_id, url="https://shop.example/", intervalSeconds=300, isActive=False
    )
    page = await create_page(client, owner, project_id, slug="shop")
    await add_component(client, owner, page["id"], monitor["id"], name="Checkout")
    await insert_subscribers(runtime, page["id"], count)
    return project_id, monitor["id"]


async def insert_subscribers(runtime: Runtime, page_id: str, count: int) -> None:
    now = datetime.now(UTC)
    async with runtime.db.worksession() as session:
        for first in range(0, count, 5000):
            rows = [
                {
                    "id": new_id(),
                    "status_page_id": page_id,
                    "kind": "email",
                    "email": f"visitor-{n}@example.org",
                    "created_at": now,
                    "confirmed_at": now,
                }
                for n in range(first, min(first + 5000, count))
            ]
            await session.execute(insert(StatusPageSubscriber), rows)
        await session.commit()


async def test_an_incident_before_50000_subscribers_writes_one_notice_and_each_hears_once(
    app: FastAPI, client: httpx.AsyncClient, runtime: Runtime, alice: Account
) -> None:
    project_id, monitor_id = await page_with_subscribers(client, runtime, alice, SUBSCRIBERS)

    written: list[tuple[str, int]] = []

    def count_rows(_conn: Any, cursor: Any, statement: str, *_args: Any) -> None:
        verb = statement.lstrip().split(" ", 1)[0].upper()
        if verb in ("INSERT", "UPDATE", "DELETE"):
            written.append((statement.split("(", 1)[0][:60], cursor.rowcount))

    async with runtime.db.worksession() as session:
        connection = await session.connection()
        event.listen(connection.sync_connection, "after_cursor_execute", count_rows)
        caller = await session.get(User, alice.id)
        assert caller is not None
        body = IncidentCreate(
            projectId=project_id, monitorId=monitor_id, title="Card payments fail"
        )
        await IncidentService(session, runtime).create(caller, body)
        await commit_and_notify(session)

    # The incident, its first timeline entry and one notice: nothing per subscriber.
    tables = {statement.split()[-1] for statement, _ in written}
    assert {"incidents", "incident_updates", "subscriber_notices"} <= tables, written
    assert sum(rows for _, rows in written) <= 4, written

    async def expanded() -> bool:
        async with runtime.db.workreader() as session:
            return bool(await session.scalar(select(SubscriberNotice.done)))

    await eventually(expanded, WITHIN)
    async with runtime.db.workreader() as session:
        notices = select(MailMessage.to_address).where(MailMessage.category == "status_page_notice")
        total = await session.scalar(select(func.count()).select_from(notices.subquery()))
        distinct = await session.scalar(
            select(func.count(func.distinct(MailMessage.to_address))).where(
                MailMessage.category == "status_page_notice"
            )
        )
        notice = await session.scalar(select(SubscriberNotice))
    assert (total, distinct) == (SUBSCRIBERS, SUBSCRIBERS)
    assert notice is not None
    assert notice.delivered == SUBSCRIBERS


@pytest.mark.parametrize("settings_overrides", [{"smtp_host": "", "subscriber_fanout_batch": 100}])
async def test_three_fanouts_racing_on_one_notice_give_each_subscriber_one_notice(
    app: FastAPI, client: httpx.AsyncClient, runtime: Runtime, alice: Account, clock: ManualClock
) -> None:
    """As after a lapsed claim taken over while its first holder still works: every batch
    but one of each round finds the cursor moved and is dropped whole."""
    project_id, monitor_id = await page_with_subscribers(client, runtime, alice, 3000)
    created = await client.post(
        "/incidents",
        headers=alice.headers,
        json={"projectId": project_id, "monitorId": monitor_id, "title": "Card payments fail"},
    )
    assert created.status_code == 201, created.text
    async with runtime.db.workreader() as session:
        notice_id = await session.scalar(select(SubscriberNotice.id))
    assert notice_id is not None
    others = [
        Fanout(runtime.settings, runtime.db, clock, runtime.mailer, lambda: None) for _ in range(2)
    ]

    async def expand(fanout: Fanout) -> None:
        while await fanout.expand_batch(notice_id):
            pass

    await asyncio.gather(*(expand(fanout) for fanout in others))

    async def expanded() -> bool:
        async with runtime.db.workreader() as session:
            return bool(await session.scalar(select(SubscriberNotice.done)))

    await eventually(expanded, WITHIN)
    async with runtime.db.workreader() as session:
        mailed = MailMessage.category == "status_page_notice"
        total = await session.scalar(select(func.count()).where(mailed))
        distinct = await session.scalar(
            select(func.count(func.distinct(MailMessage.to_address))).where(mailed)
        )
        delivered = await session.scalar(select(SubscriberNotice.delivered))
    assert (total, distinct, delivered) == (3000, 3000, 3000)
