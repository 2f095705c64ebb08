"""The retention job walked through time on a manual clock: notices a week ahead, one e-mail,
retries, the purge on the day by each owner's plan, aggregates that stay, and two runs at
once that do nothing twice."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from tests.app_settings import fixture_value, overriding
from tests.conftest import Cast, InProject, Mailbox, SignUp, SmtpServer, eventually
from tests.factories import Target, ingest
from tests.retention.conftest import (
    MONDAY,
    count,
    headers_of,
    ingest_old,
    job_of,
    monitor_of,
    notice_mails,
    notices,
    old_results,
    project_of,
    purged,
    text_of,
)
from upwatch.kit.clock import ManualClock
from upwatch.kit.db import Database
from upwatch.mail.sender import retry_delay
from upwatch.models import (
    Incident,
    IncidentDay,
    RetentionNotice,
)
from upwatch.retention.job import RetentionJob
from upwatch.retention.repository.storage import CHECK_RESULT_BYTES
from upwatch.runtime import Runtime


async def test_an_owners_old_results_are_announced_a_week_ahead_mailed_once_and_purged_on_the_day(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, runtime: Runtime, clock: ManualClock,
    mailbox: Mailbox, target: Target,
) -> None:  # fmt: skip
    engine = app.state.engine
    monitor = await monitor_of(client, cast.alice, cast.project_id, target)
    for days_ago, ok in ((40, True), (40, False), (35, True), (20, True), (1, True)):
        # A second apart on the same day: results are one per monitor and millisecond.
        at = MONDAY - timedelta(days=days_ago) + timedelta(seconds=0 if ok else 1)
        await ingest(engine, monitor, at, ok=ok)
    job = job_of(runtime)

    assert await job.run_once() >= 1
    # The free plan keeps 30 days; the batch going next Monday holds what is older than
    # 30 days then: the three results of 35 and 40 days ago, and the incident the failed
    # check opened (resolved 35 days ago).
    notice, incident = await notices(client, cast.alice)
    assert (incident["dataType"], incident["metadata"]["count"]) == ("incident_data", 1)
    assert notice["dataType"] == "check_results"
    assert notice["userId"] == cast.alice.id
    assert notice["expiryDate"] == "2026-12-07T00:00:00Z"
    assert notice["metadata"] == {"count": 3, "sizeBytes": 3 * CHECK_RESULT_BYTES + len("late")}
    assert set(notice) == {
        "id", "userId", "dataType", "expiryDate", "notified", "retryCount",
        "lastNotificationAttempt", "metadata", "createdAt", "updatedAt",
    }  # fmt: skip
    assert await notices(client, cast.bob) == []  # Bob is a member, not the owner

    # One e-mail announces both.
    await eventually(lambda: len(notice_mails(mailbox, cast.alice)) == 1)
    [mail] = notice_mails(mailbox, cast.alice)
    assert "check results from before 2026-11-07: 3 records" in text_of(mail)

    async def notified() -> bool:
        return all(n["notified"] for n in await notices(client, cast.alice))

    await eventually(notified)
    for notice in await notices(client, cast.alice):
        assert notice["retryCount"] == 0
        assert notice["lastNotificationAttempt"] >= "2026-11-30T12:00:00"

    # Later runs that week announce nothing new and mail nothing again.
    assert await job.run_once() == 0  # today's run is done
    for _ in range(6):
        clock.advance(timedelta(days=1))
        await job.run_once()
    assert len(await notices(client, cast.alice)) == 2
    assert len(notice_mails(mailbox, cast.alice)) == 1
    assert await old_results(runtime, monitor) == 5

    clock.advance(timedelta(hours=13))  # Monday 2026-12-07, 01:00
    await job.run_once()
    assert await old_results(runtime, monitor) == 2
    # The incident went too, rolled up into its day first.
    assert await count(runtime, select(func.count()).select_from(Incident)) == 0
    async with runtime.db.readsession() as session:
        [day] = (await session.scalars(select(IncidentDay))).all()
    assert (day.day, day.incidents, day.duration_seconds) == ("2026-10-21", 1, 5 * 86400 - 1)
    # The next batch (the result of 20 days before the first run) is announced in turn.
    [following] = await notices(client, cast.alice)
    assert following["expiryDate"] == "2026-12-14T00:00:00Z"
    assert following["metadata"]["count"] == 1
    await eventually(lambda: len(notice_mails(mailbox, cast.alice)) == 2)

    # The day aggregates of the purged days still answer the 90-day figures.
    stats = await client.get(
        f"/monitors/{monitor}/stats?period=90d", headers=await headers_of(client, cast.alice)
    )
    assert stats.status_code == 200
    assert stats.json()["totalChecks"] >= 5


class TestWhenTheEmailCannotBeDelivered:
    settings_overrides = overriding(
        allow_private_targets=True, smtp_port=fixture_value("late_smtp", "port")
    )

    async def test_the_notice_counts_failed_attempts_and_is_notified_once_smtp_answers(
        self, client: httpx.AsyncClient, sign_up: SignUp, app: FastAPI, runtime: Runtime,
        clock: ManualClock, late_smtp: SmtpServer, target: Target,
    ) -> None:  # fmt: skip
        dave = await sign_up("dave@example.com")
        monitor = await monitor_of(client, dave, await project_of(client, dave), target)
        await ingest_old(app, monitor, [45])
        await job_of(runtime).run_once()

        async def attempted(times: int) -> bool:
            [notice] = await notices(client, dave)
            return int(notice["retryCount"]) == times

        runtime.mailer.wake()
        await eventually(lambda: attempted(1))
        [notice] = await notices(client, dave)
        assert notice["notified"] is False
        assert notice["lastNotificationAttempt"] == "2026-11-30T12:00:00Z"

        late_smtp.start()
        clock.advance(retry_delay(1, draw=lambda: 1.0) + timedelta(seconds=1))
        runtime.mailer.wake()
        await late_smtp.mailbox.wait_for(dave.email)

        async def notified() -> bool:
            return bool((await notices(client, dave))[0]["notified"])

        await eventually(notified)
        [notice] = await notices(client, dave)
        assert notice["retryCount"] == 1  # the failed attempt; the delivery is none
        assert notice["lastNotificationAttempt"] > "2026-11-30T12:00:00Z"


async def test_each_owner_is_purged_by_their_own_plan_and_an_upgrade_keeps_what_is_announced(
    client: httpx.AsyncClient, sign_up: SignUp, app: FastAPI, runtime: Runtime,
    clock: ManualClock, target: Target,
) -> None:  # fmt: skip
    free, pro = await sign_up("free@example.com"), await sign_up("pro@example.com")
    upgraded = await client.post("/subscriptions/upgrade", headers=pro.headers, json={})
    assert upgraded.status_code == 200
    free_monitor = await monitor_of(client, free, await project_of(client, free), target)
    pro_monitor = await monitor_of(client, pro, await project_of(client, pro), target)
    for monitor in (free_monitor, pro_monitor):
        await ingest_old(app, monitor, [400, 100, 40, 10])
    job = job_of(runtime)
    await job.run_once()
    [free_notice] = await notices(client, free)
    assert free_notice["metadata"]["count"] == 3  # older than 30 days next Monday
    [pro_notice] = await notices(client, pro)
    assert pro_notice["metadata"]["count"] == 1  # older than 365 days

    clock.advance(timedelta(days=7))
    await job.run_once()
    assert await old_results(runtime, free_monitor) == 1
    assert await old_results(runtime, pro_monitor) == 3

    # The free owner upgrades before the next batch (the 10-day-old result, announced for
    # the Monday after) goes: the pending notice is dropped and nothing more is deleted.
    clock.advance(timedelta(days=1))
    await job.run_once()
    assert [n["metadata"]["count"] for n in await notices(client, free)] == [1]
    headers = await headers_of(client, free)
    assert (
        await client.post("/subscriptions/upgrade", headers=headers, json={})
    ).status_code == 200
    clock.advance(timedelta(days=1))
    await job.run_once()
    assert await notices(client, free) == []
    clock.advance(timedelta(days=14))
    await job.run_once()
    await job.run_once()
    assert await old_results(runtime, free_monitor) == 1


async def test_two_runs_at_once_delete_nothing_twice_and_announce_nothing_twice(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, runtime: Runtime, clock: ManualClock,
    mailbox: Mailbox, target: Target, as_alice: InProject,
) -> None:  # fmt: skip
    monitor = await monitor_of(client, cast.alice, cast.project_id, target)
    await ingest_old(app, monitor, [40 + n % 5 for n in range(30)])
    for n in range(4):  # resolved incidents 40 days ago
        created = await as_alice.incident(monitorId=monitor, title=f"Slow {n}")
        async with runtime.db.sessionmaker() as session:
            incident = await session.get(Incident, created["id"])
            assert incident is not None
            incident.status = "resolved"
            incident.started_at = MONDAY - timedelta(days=41)
            incident.resolved_at = MONDAY - timedelta(days=40)
            await session.commit()
    # Two processes' worth: each run with a database engine of its own, and batches of
    # three rows, so their transactions interleave.
    settings = runtime.settings.model_copy(
        update={"retention_batch_rows": 3, "retention_batch_pause_seconds": 0}
    )
    databases = [Database(settings), Database(settings)]
    jobs = [
        RetentionJob(settings, d, clock, runtime.metrics, runtime.mailer, runtime.catalog)
        for d in databases
    ]
    try:
        done = await asyncio.gather(*(job.run_once() for job in jobs))
        assert sum(done) == 3  # Alice, Bob and Charlie, each by one of them
        made = await count(runtime, select(func.count()).select_from(RetentionNotice))
        assert made == 2  # Alice's check results and incidents, once each
        await eventually(lambda: len(notice_mails(mailbox, cast.alice)) == 1)

        before = {t: purged(runtime, t) for t in ("check_results", "incident_data")}
        clock.advance(timedelta(days=7))
        await asyncio.gather(*(job.run_once() for job in jobs))
        assert purged(runtime, "check_results") - before["check_results"] == 30
        assert purged(runtime, "incident_data") - before["incident_data"] == 4
        assert await old_results(runtime, monitor) == 0
        async with runtime.db.readsession() as session:
            days = (await session.scalars(select(IncidentDay))).all()
        assert sum(d.incidents for d in days) == 4
    finally:
        for database in databases:
            await database.dispose()
    assert len(notice_mails(mailbox, cast.alice)) == 1


async def test_small_batches_spanning_monitors_take_every_expired_row_and_nothing_newer(
    client: httpx.AsyncClient, cast: Cast, app: FastAPI, runtime: Runtime, clock: ManualClock,
    target: Target,
) -> None:  # fmt: skip
    monitors = [await monitor_of(client, cast.alice, cast.project_id, target) for _ in range(3)]
    for monitor, expired in zip(monitors, (5, 0, 7), strict=True):
        await ingest_old(app, monitor, [40 + n % 3 for n in range(expired)] + [10, 20])
    settings = runtime.settings.model_copy(
        update={"retention_batch_rows": 4, "retention_batch_pause_seconds": 0}
    )
    job = RetentionJob(
        settings, runtime.db, clock, runtime.metrics, runtime.mailer, runtime.catalog
    )
    await job.run_once()
    clock.advance(timedelta(days=7))
    await job.run_once()
    assert [await old_results(runtime, m) for m in monitors] == [2, 2, 2]
