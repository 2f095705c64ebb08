"""All of retention's SQL: claims on an owner's daily run, notices, the measure and purge of
each data type, and the figures storage usage is made from. Every query is scoped to one
owner through ``_monitors``/``_projects``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    String,
    and_,
    cast,
    delete,
    func,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.engine import CursorResult
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.kit.db import dialect_insert
from upwatch.models import (
    Alert,
    AlertAttempt,
    CheckResult,
    CheckTiming,
    DailyAggregate,
    HistogramBucket,
    HourlyCount,
    Incident,
    IncidentDay,
    IncidentUpdate,
    MailMessage,
    Monitor,
    Project,
    RetentionNotice,
    RetentionRun,
    User,
)

# Bytes a row takes, indexes included, for notices and usage.storage alike. Results and
# timings: PostgreSQL's pg_total_relation_size over 200,000 rows (docs/retention.md); the
# others are estimates from their columns and indexes.
CHECK_RESULT_BYTES = 400
CHECK_TIMING_BYTES = 100
ALERT_BYTES = 260
ALERT_ATTEMPT_BYTES = 90
INCIDENT_BYTES = 220
INCIDENT_UPDATE_BYTES = 120

_NO_SYNC = {"synchronize_session": False}


def _monitors(owner_id: str) -> Select[Any]:
    return (
        select(Monitor.id)
        .join(Project, Project.id == Monitor.project_id)
        .where(Project.owner_id == owner_id)
    )


def _projects(owner_id: str) -> Select[Any]:
    return select(Project.id).where(Project.owner_id == owner_id)


def _results(owner_id: str, before: datetime) -> ColumnElement[bool]:
    return and_(CheckResult.monitor_id.in_(_monitors(owner_id)), CheckResult.checked_at < before)


def _resolved_incidents(owner_id: str, before: datetime) -> ColumnElement[bool]:
    return and_(
        Incident.project_id.in_(_projects(owner_id)),
        Incident.status == "resolved",
        Incident.resolved_at < before,
    )


def _alerts(owner_id: str, before: datetime) -> ColumnElement[bool]:
    """Delivery records of incidents resolved before ``before``, and test sends made
    before it."""
    incidents = select(Incident.id).where(_resolved_incidents(owner_id, before))
    return and_(
        Alert.project_id.in_(_projects(owner_id)),
        or_(
            Alert.incident_id.in_(incidents),
            and_(Alert.incident_id.is_(None), Alert.created_at < before),
        ),
    )


class RetentionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def _count(self, query: Select[Any]) -> int:
        return int(await self.session.scalar(query) or 0)

    # ---- claims ----

    async def owners_due(self, today: str, now: datetime, limit: int) -> Sequence[str]:
        query = (
            select(User.id)
            .outerjoin(RetentionRun, RetentionRun.user_id == User.id)
            .where(
                or_(RetentionRun.done_day.is_(None), RetentionRun.done_day < today),
                or_(RetentionRun.claimed_until.is_(None), RetentionRun.claimed_until < now),
            )
            .order_by(User.id)
            .limit(limit)
        )
        return (await self.session.scalars(query)).all()

    async def claim(
        self, owner_id: str, today: str, now: datetime, until: datetime, token: str
    ) -> bool:
        """Take the owner's run for today, unless it is done or another process holds it."""
        insert = dialect_insert(self.session)
        await self.session.execute(
            insert(RetentionRun)
            .values(user_id=owner_id, result_rows=0)
            .on_conflict_do_nothing(index_elements=["user_id"])
        )
        result = await self.session.execute(
            update(RetentionRun)
            .where(
                RetentionRun.user_id == owner_id,
                or_(RetentionRun.done_day.is_(None), RetentionRun.done_day < today),
                or_(RetentionRun.claimed_until.is_(None), RetentionRun.claimed_until < now),
            )
            .values(claim=token, claimed_until=until)
            .execution_options(**_NO_SYNC)
        )
        return _rowcount(result) == 1

    async def renew(self, owner_id: str, token: str, until: datetime) -> bool:
        """Extend our claim; False when it was lost (expired and taken by another run)."""
        result = await self.session.execute(
            update(RetentionRun)
            .where(RetentionRun.user_id == owner_id, RetentionRun.claim == token)
            .values(claimed_until=until)
            .execution_options(**_NO_SYNC)
        )
        return _rowcount(result) == 1

    async def finish(
        self,
        owner_id: str,
        token: str,
        today: str,
        result_rows: int,
        kept_from_day: str | None,
        through_day: str,
    ) -> bool:
        result = await self.session.execute(
            update(RetentionRun)
            .where(RetentionRun.user_id == owner_id, RetentionRun.claim == token)
            .values(
                done_day=today,
                claim=None,
                claimed_until=None,
                result_rows=result_rows,
                kept_from_day=kept_from_day,
                through_day=through_day,
            )
            .execution_options(**_NO_SYNC)
        )
        return _rowcount(result) == 1

    async def run_of(self, owner_id: str) -> RetentionRun | None:
        return await self.session.get(RetentionRun, owner_id)

    # ---- measuring and purging each data type ----

    async def measure(self, owner_id: str, data_type: str, before: datetime) -> tuple[int, int]:
        """(rows, bytes) of the owner's ``data_type`` older than ``before``."""
        if data_type == "check_results":
            count, text = (
                await self.session.execute(
                    select(func.count(), func.coalesce(func.sum(func.length(CheckResult.error)), 0))
                    .select_from(CheckResult)
                    .where(_results(owner_id, before))
                )
            ).one()
            return int(count), int(count) * CHECK_RESULT_BYTES + int(text)
        if data_type == "monitoring_data":
            count = await self._count(
                select(func.count())
                .select_from(CheckTiming)
                .join(CheckResult, CheckResult.id == CheckTiming.result_id)
                .where(_results(owner_id, before))
            )
            return count, count * CHECK_TIMING_BYTES
        if data_type == "alert_history":
            alerts = select(Alert.id).where(_alerts(owner_id, before))
            count, facts = (
                await self.session.execute(
                    select(
                        func.count(),
                        func.coalesce(func.sum(func.length(cast(Alert.facts, String))), 0),
                    ).where(_alerts(owner_id, before))
                )
            ).one()
            attempts = await self._count(
                select(func.count()).where(AlertAttempt.alert_id.in_(alerts))
            )
            return int(count), (
                int(count) * ALERT_BYTES + int(facts) + attempts * ALERT_ATTEMPT_BYTES
            )
        incidents = select(Incident.id).where(_resolved_incidents(owner_id, before))
        count, text = (
            await self.session.execute(
                select(
                    func.count(),
                    func.coalesce(
                        func.sum(func.length(Incident.title) + func.length(Incident.description)),
                        0,
                    ),
                ).where(_resolved_incidents(owner_id, before))
            )
        ).one()
        updates, update_text = (
            await self.session.execute(
                select(
                    func.count(), func.coalesce(func.sum(func.length(IncidentUpdate.message)), 0)
                ).where(IncidentUpdate.incident_id.in_(incidents))
            )
        ).one()
        size = (
            int(count) * INCIDENT_BYTES
            + int(text)
            + int(updates) * INCIDENT_UPDATE_BYTES
            + int(update_text)
        )
        return int(count), size

    async def monitor_ids(self, owner_id: str) -> list[str]:
        return list((await self.session.scalars(_monitors(owner_id).order_by(Monitor.id))).all())

    async def purge_results(
        self,
        monitor_ids: Sequence[str],
        data_type: str,
        before: datetime,
        rows: int,
        cursor: tuple[int, tuple[datetime, int] | None] | None,
    ) -> tuple[int, tuple[int, tuple[datetime, int] | None] | None]:
        """Delete up to ``rows`` results older than ``before`` (or only their timings, for
        ``monitoring_data``) of ``monitor_ids``, monitor after monitor and in order of time
        from ``cursor`` on: how many rows went, and where the next batch starts (None when
        none is left).

        Walking each monitor's index from where the last batch ended never reads the entries
        of rows already deleted, which a vacuum has not cleared yet: on PostgreSQL a plain
        "oldest first, LIMIT" took longer with every batch. One batch spans monitors, so a
        page of the table (results of many monitors, stored in time order) is written once
        per batch on SQLite, not once per monitor."""
        index, after = cursor if cursor is not None else (0, None)
        gone = 0
        budget = rows
        while index < len(monitor_ids):
            query = select(CheckResult.id, CheckResult.checked_at).where(
                CheckResult.monitor_id == monitor_ids[index], CheckResult.checked_at < before
            )
            if after is not None:
                query = query.where(tuple_(CheckResult.checked_at, CheckResult.id) > tuple_(*after))
            batch = (
                await self.session.execute(
                    query.order_by(CheckResult.checked_at, CheckResult.id).limit(budget)
                )
            ).all()
            if batch:
                ids = [row[0] for row in batch]
                table = CheckTiming if data_type == "monitoring_data" else CheckResult
                key = CheckTiming.result_id if data_type == "monitoring_data" else CheckResult.id
                gone += _rowcount(
                    await self.session.execute(
                        delete(table).where(key.in_(ids)).execution_options(**_NO_SYNC)
                    )
                )
            if len(batch) == budget:
                last_id, last_at = batch[-1]
                return gone, (index, (last_at, last_id))
            budget -= len(batch)
            index, after = index + 1, None
        return gone, None

    async def purge_batch(
        self, owner_id: str, data_type: str, before: datetime, rows: int, after: Any
    ) -> tuple[int, Any]:
        """Delete the next ``rows`` alert records or resolved incidents older than
        ``before``, in order of id from ``after`` on (see ``purge_results``): how many went
        and where the next batch starts. Incidents are rolled up into incident_days by the
        statement that deletes them, so none is counted twice whoever else runs."""
        if data_type == "alert_history":
            alerts = select(Alert.id).where(_alerts(owner_id, before))
            if after is not None:
                alerts = alerts.where(Alert.id > after)
            alert_ids = list(
                (await self.session.scalars(alerts.order_by(Alert.id).limit(rows))).all()
            )
            if not alert_ids:
                return 0, None
            gone = _rowcount(
                await self.session.execute(
                    delete(Alert).where(Alert.id.in_(alert_ids)).execution_options(**_NO_SYNC)
                )
            )
            return gone, (alert_ids[-1] if len(alert_ids) == rows else None)
        incidents = select(Incident.id).where(_resolved_incidents(owner_id, before))
        if after is not None:
            incidents = incidents.where(Incident.id > after)
        ids = list((await self.session.scalars(incidents.order_by(Incident.id).limit(rows))).all())
        if not ids:
            return 0, None
        return await self._purge_incidents(ids), (ids[-1] if len(ids) == rows else None)

    async def _purge_incidents(self, ids: list[str]) -> int:
        gone = (
            await self.session.execute(
                delete(Incident)
                .where(Incident.id.in_(ids), Incident.status == "resolved")
                .returning(
                    Incident.project_id,
                    Incident.monitor_id,
                    Incident.started_at,
                    Incident.resolved_at,
                )
                .execution_options(**_NO_SYNC)
            )
        ).all()
        days: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0])
        for project_id, monitor_id, started_at, resolved_at in gone:
            day = days[(project_id, monitor_id or "", started_at.date().isoformat())]
            day[0] += 1
            day[1] += max(0.0, ((resolved_at or started_at) - started_at).total_seconds())
        if days:
            insert = dialect_insert(self.session)
            statement = insert(IncidentDay).values(
                [
                    {
                        "project_id": project_id,
                        "monitor_id": monitor_id,
                        "day": day,
                        "incidents": int(count),
                        "duration_seconds": seconds,
                    }
                    for (project_id, monitor_id, day), (count, seconds) in days.items()
                ]
            )
            await self.session.execute(
                statement.on_conflict_do_update(
                    index_elements=["project_id", "monitor_id", "day"],
                    set_={
                        "incidents": IncidentDay.incidents + statement.excluded.incidents,
                        "duration_seconds": IncidentDay.duration_seconds
                        + statement.excluded.duration_seconds,
                    },
                )
            )
        return len(gone)

    async def purge_hours(self, owner_id: str, before_hour: str) -> int:
        """Hour counts of hours before ``before_hour`` (only the last day's are read)."""
        result = await self.session.execute(
            delete(HourlyCount)
            .where(HourlyCount.monitor_id.in_(_monitors(owner_id)), HourlyCount.hour < before_hour)
            .execution_options(**_NO_SYNC)
        )
        return _rowcount(result)

    async def purge_days(self, owner_id: str, before_day: str) -> int:
        """Daily aggregates, histograms and incident days of days before ``before_day``."""
        gone = 0
        monitors = _monitors(owner_id)
        for table in (DailyAggregate, HistogramBucket):
            result = await self.session.execute(
                delete(table)
                .where(table.monitor_id.in_(monitors), table.day < before_day)
                .execution_options(**_NO_SYNC)
            )
            gone += _rowcount(result)
        result = await self.session.execute(
            delete(IncidentDay)
            .where(IncidentDay.project_id.in_(_projects(owner_id)), IncidentDay.day < before_day)
            .execution_options(**_NO_SYNC)
        )
        return gone + _rowcount(result)

    # ---- notices ----

    async def notices(self, owner_id: str) -> Sequence[RetentionNotice]:
        query = select(RetentionNotice).where(RetentionNotice.user_id == owner_id)
        return (await self.session.scalars(query)).all()

    async def add_notice(self, notice: RetentionNotice) -> bool:
        """False when a run elsewhere made the same notice first."""
        insert = dialect_insert(self.session)
        result = await self.session.execute(
            insert(RetentionNotice)
            .values(
                id=notice.id,
                user_id=notice.user_id,
                data_type=notice.data_type,
                expiry_date=notice.expiry_date,
                cutoff=notice.cutoff,
                retention_days=notice.retention_days,
                count=notice.count,
                size_bytes=notice.size_bytes,
                earlier_attempts=0,
                created_at=notice.created_at,
                updated_at=notice.updated_at,
            )
            .on_conflict_do_nothing(index_elements=["user_id", "data_type", "expiry_date"])
        )
        return _rowcount(result) == 1

    async def set_mail(self, notice_ids: Sequence[str], mail_id: str, now: datetime) -> None:
        await self.session.execute(
            update(RetentionNotice)
            .where(RetentionNotice.id.in_(notice_ids))
            .values(mail_id=mail_id, updated_at=now)
            .execution_options(**_NO_SYNC)
        )

    async def drop_notices(self, notice_ids: Sequence[str]) -> None:
        if notice_ids:
            await self.session.execute(
                delete(RetentionNotice)
                .where(RetentionNotice.id.in_(notice_ids))
                .execution_options(**_NO_SYNC)
            )

    async def mark_purged(self, notice_id: str, now: datetime) -> None:
        await self.session.execute(
            update(RetentionNotice)
            .where(RetentionNotice.id == notice_id)
            .values(purged_at=now, updated_at=now)
            .execution_options(**_NO_SYNC)
        )

    async def upcoming(
        self, owner_id: str, now: datetime
    ) -> Sequence[tuple[RetentionNotice, MailMessage | None]]:
        """The owner's notices of data not yet expired, soonest first, with their e-mail."""
        query = (
            select(RetentionNotice, MailMessage)
            .outerjoin(MailMessage, MailMessage.id == RetentionNotice.mail_id)
            .where(
                RetentionNotice.user_id == owner_id,
                RetentionNotice.purged_at.is_(None),
                RetentionNotice.expiry_date > now,
            )
            .order_by(RetentionNotice.expiry_date, RetentionNotice.data_type)
        )
        return [(notice, mail) for notice, mail in (await self.session.execute(query)).all()]

    async def mails(self, mail_ids: Sequence[str]) -> dict[str, MailMessage]:
        if not mail_ids:
            return {}
        rows = await self.session.scalars(select(MailMessage).where(MailMessage.id.in_(mail_ids)))
        return {m.id: m for m in rows}

    async def remail(
        self, notice_ids: Sequence[str], mail_id: str, attempts: int, now: datetime
    ) -> None:
        """Announce again with a new e-mail, counting the failed one's attempts."""
        await self.session.execute(
            update(RetentionNotice)
            .where(RetentionNotice.id.in_(notice_ids))
            .values(
                mail_id=mail_id,
                earlier_attempts=RetentionNotice.earlier_attempts + attempts,
                updated_at=now,
            )
            .execution_options(**_NO_SYNC)
        )

    async def forget_purged(self, owner_id: str, before: datetime) -> None:
        await self.session.execute(
            delete(RetentionNotice)
            .where(
                RetentionNotice.user_id == owner_id,
                RetentionNotice.purged_at.is_not(None),
                RetentionNotice.purged_at < before,
            )
            .execution_options(**_NO_SYNC)
        )

    # ---- what storage usage is made from ----

    async def result_rows_by_day(
        self, owner_id: str, from_day: str | None
    ) -> list[tuple[date, int]]:
        """Raw results kept per day, from the day aggregates' counts (never the rows)."""
        query = (
            select(DailyAggregate.day, func.sum(DailyAggregate.total))
            .where(DailyAggregate.monitor_id.in_(_monitors(owner_id)))
            .group_by(DailyAggregate.day)
        )
        if from_day is not None:
            query = query.where(DailyAggregate.day >= from_day)
        return [
            (date.fromisoformat(d), int(n)) for d, n in (await self.session.execute(query)).all()
        ]

    async def kept_result_rows(self, owner_id: str) -> int:
        """Raw results kept: the job's figure up to its ``through_day``, plus the day
        aggregates' counts of the days since (of every day, before the job's first run), in
        one query."""
        run = select(RetentionRun.through_day).where(RetentionRun.user_id == owner_id)
        measured = select(RetentionRun.result_rows).where(RetentionRun.user_id == owner_id)
        since = select(func.coalesce(func.sum(DailyAggregate.total), 0)).where(
            DailyAggregate.monitor_id.in_(_monitors(owner_id)),
            DailyAggregate.day > func.coalesce(run.scalar_subquery(), ""),
        )
        both = select(since.scalar_subquery(), func.coalesce(measured.scalar_subquery(), 0))
        recent, earlier = (await self.session.execute(both)).one()
        return int(recent or 0) + int(earlier or 0)

    async def history_bytes(self, owner_id: str) -> int:
        """Incidents, their timelines and alert records of the owner's projects (one query:
        usage is read on every GET /subscriptions/current)."""
        projects = _projects(owner_id)
        incidents = select(Incident.id).where(Incident.project_id.in_(projects))
        alerts = select(Alert.id).where(Alert.project_id.in_(projects))
        counts = (
            await self.session.execute(
                select(
                    select(func.count()).where(Incident.project_id.in_(projects)).scalar_subquery(),
                    select(func.count())
                    .where(IncidentUpdate.incident_id.in_(incidents))
                    .scalar_subquery(),
                    select(func.count()).where(Alert.project_id.in_(projects)).scalar_subquery(),
                    select(func.count()).where(AlertAttempt.alert_id.in_(alerts)).scalar_subquery(),
                )
            )
        ).one()
        sizes = (INCIDENT_BYTES, INCIDENT_UPDATE_BYTES, ALERT_BYTES, ALERT_ATTEMPT_BYTES)
        return sum(int(n or 0) * size for n, size in zip(counts, sizes, strict=True))


def _rowcount(result: object) -> int:
    assert isinstance(result, CursorResult)
    return int(result.rowcount)
