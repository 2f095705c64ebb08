"""What usage.storage is made from: the bytes a row takes, the raw results kept per day, and
the weight of incidents and alert records."""

from __future__ import annotations

from datetime import date

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.models import (
    Alert,
    AlertAttempt,
    DailyAggregate,
    Incident,
    IncidentUpdate,
    RetentionRun,
)
from upwatch.retention.repository.scope import owner_monitors, owner_projects

# Bytes a row takes, indexes included, for notices and usage.storage alike. A result, and
# what its timings add to it: PostgreSQL's pg_total_relation_size over 200,000 compact rows
# with and without timings (docs/retention.md; SQLite takes less); the others are estimates
# from their columns and indexes.
CHECK_RESULT_BYTES = 100
CHECK_TIMING_BYTES = 18
ALERT_BYTES = 260
ALERT_ATTEMPT_BYTES = 90
INCIDENT_BYTES = 220
INCIDENT_UPDATE_BYTES = 120


class StorageRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def result_rows_by_day(
        self, owner_id: str, from_day: str | None
    ) -> list[tuple[date, int]]:
        """Raw results kept per day, from the day aggregates' counts (never the rows)."""
        query = (
            select(DailyAggregate.day, func.sum(DailyAggregate.total))
            .where(DailyAggregate.monitor_id.in_(owner_monitors(owner_id)))
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
            DailyAggregate.monitor_id.in_(owner_monitors(owner_id)),
            DailyAggregate.day > func.coalesce(run.scalar_subquery(), ""),
        )
        both = select(since.scalar_subquery(), func.coalesce(measured.scalar_subquery(), 0))
        recent, earlier = (await self.session.execute(both)).one()
        return int(recent or 0) + int(earlier or 0)

    async def history_bytes(self, owner_id: str) -> int:
        """Incidents, their timelines and alert records of the owner's projects (one query:
        usage is read on every GET /subscriptions/current)."""
        projects = owner_projects(owner_id)
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
