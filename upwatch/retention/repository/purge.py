"""Measuring and purging each data type of one owner's: raw results and their timings in
batches along each monitor's index, alert records and resolved incidents (rolled up into
incident days as they go), and the day and hour counts past their keep."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    SmallInteger,
    String,
    and_,
    cast,
    delete,
    func,
    literal,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.kit.db import dialect_insert
from upwatch.models import (
    Alert,
    AlertAttempt,
    CheckResult,
    DailyAggregate,
    HistogramBucket,
    HourlyCount,
    Incident,
    IncidentDay,
    IncidentUpdate,
    Monitor,
)
from upwatch.models.keys import monitor_numbers
from upwatch.models.monitor import TIMING_FIELDS
from upwatch.retention.repository.scope import NO_SYNC, owner_monitors, owner_projects, rowcount
from upwatch.retention.repository.storage import (
    ALERT_ATTEMPT_BYTES,
    ALERT_BYTES,
    CHECK_RESULT_BYTES,
    CHECK_TIMING_BYTES,
    INCIDENT_BYTES,
    INCIDENT_UPDATE_BYTES,
)


def _results(owner_id: str, before: datetime) -> ColumnElement[bool]:
    return and_(
        CheckResult.monitor_number.in_(monitor_numbers(owner_monitors(owner_id))),
        CheckResult.checked_at < before,
    )


def _key_value(at: datetime, region: int) -> Any:
    """(time, region) of a result as values of the key's types (the time as stored)."""
    return tuple_(literal(at, CheckResult.checked_at.type), literal(region, SmallInteger()))


# A result whose timings ``monitoring_data`` retention has not emptied yet.
_TIMED = or_(*(getattr(CheckResult, name).is_not(None) for name in TIMING_FIELDS))


def _resolved_incidents(owner_id: str, before: datetime) -> ColumnElement[bool]:
    return and_(
        Incident.project_id.in_(owner_projects(owner_id)),
        Incident.status == "resolved",
        Incident.resolved_at < before,
    )


def _alerts(owner_id: str, before: datetime) -> ColumnElement[bool]:
    """Delivery records of incidents resolved before ``before``, and test sends made
    before it."""
    incidents = select(Incident.id).where(_resolved_incidents(owner_id, before))
    return and_(
        Alert.project_id.in_(owner_projects(owner_id)),
        or_(
            Alert.incident_id.in_(incidents),
            and_(Alert.incident_id.is_(None), Alert.created_at < before),
        ),
    )


class PurgeRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def _count(self, query: Select[Any]) -> int:
        return int(await self.session.scalar(query) or 0)

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
                .select_from(CheckResult)
                .where(_results(owner_id, before), _TIMED)
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
        return list(
            (await self.session.scalars(owner_monitors(owner_id).order_by(Monitor.id))).all()
        )

    async def purge_results(
        self,
        monitor_ids: Sequence[str],
        data_type: str,
        before: datetime,
        rows: int,
        cursor: tuple[int, tuple[datetime, int] | None] | None,
    ) -> tuple[int, tuple[int, tuple[datetime, int] | None] | None]:
        """Delete up to ``rows`` results older than ``before`` (or empty their timings, for
        ``monitoring_data``) of ``monitor_ids``, monitor after monitor and along each one's
        key (time, region) from ``cursor`` on: how many rows went, and where the next batch
        starts (None when none is left).

        Walking each monitor's key range from where the last batch ended never reads the
        entries of rows already deleted, which a vacuum has not cleared yet: on PostgreSQL a
        plain "oldest first, LIMIT" took longer with every batch. One batch spans monitors.
        Emptying timings walks rows whose timings are gone already too (reads only): the
        key has no place for them."""
        index, after = cursor if cursor is not None else (0, None)
        gone = 0
        budget = rows
        timings = data_type == "monitoring_data"
        key = tuple_(CheckResult.checked_at, CheckResult.region_number)
        while index < len(monitor_ids):
            number = await self.session.scalar(
                select(Monitor.number).where(Monitor.id == monitor_ids[index])
            )
            span = [CheckResult.monitor_number == number, CheckResult.checked_at < before]
            if after is not None:
                span.append(key > _key_value(*after))
            batch = (
                await self.session.execute(
                    select(CheckResult.checked_at, CheckResult.region_number)
                    .where(*span)
                    .order_by(CheckResult.checked_at, CheckResult.region_number)
                    .limit(budget)
                )
            ).all()
            if batch:
                within = and_(*span, key <= _key_value(*batch[-1]))
                if timings:
                    statement: Any = (
                        update(CheckResult)
                        .where(within, _TIMED)
                        .values({getattr(CheckResult, name): None for name in TIMING_FIELDS})
                    )
                else:
                    statement = delete(CheckResult).where(within)
                gone += rowcount(await self.session.execute(statement.execution_options(**NO_SYNC)))
            if len(batch) == budget:
                last_at, last_region = batch[-1]
                return gone, (index, (last_at, last_region))
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
            gone = rowcount(
                await self.session.execute(
                    delete(Alert).where(Alert.id.in_(alert_ids)).execution_options(**NO_SYNC)
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
                .execution_options(**NO_SYNC)
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
            .where(
                HourlyCount.monitor_id.in_(owner_monitors(owner_id)), HourlyCount.hour < before_hour
            )
            .execution_options(**NO_SYNC)
        )
        return rowcount(result)

    async def purge_days(self, owner_id: str, before_day: str) -> int:
        """Daily aggregates, histograms and incident days of days before ``before_day``."""
        gone = 0
        monitors = owner_monitors(owner_id)
        for table in (DailyAggregate, HistogramBucket):
            result = await self.session.execute(
                delete(table)
                .where(table.monitor_id.in_(monitors), table.day < before_day)
                .execution_options(**NO_SYNC)
            )
            gone += rowcount(result)
        result = await self.session.execute(
            delete(IncidentDay)
            .where(
                IncidentDay.project_id.in_(owner_projects(owner_id)), IncidentDay.day < before_day
            )
            .execution_options(**NO_SYNC)
        )
        return gone + rowcount(result)
