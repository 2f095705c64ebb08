"""Turning check reports into stored results, daily aggregates and monitor status.

One batch is one transaction: the raw rows go in with one INSERT, the day aggregates with one
upsert, and each monitor's status moves through the pure status machine.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.engine.broker import Broker, CheckReport
from upwatch.engine.ports import TransitionHandler
from upwatch.engine.status import (
    IncidentAction,
    MonitorState,
    MonitorStatus,
    RegionState,
    Result,
    Settings,
    apply,
)
from upwatch.kit.db import Database, commit_and_notify
from upwatch.kit.outbox import stop_if_cancelled
from upwatch.kit.supervisor import progress
from upwatch.models import CheckResult, DailyAggregate, Monitor
from upwatch.monitors.histogram import Histogram
from upwatch.probes.outcome import Outcome

log = logging.getLogger(__name__)


def decode_state(monitor: Monitor) -> MonitorState:
    data = monitor.state or {}
    regions = {
        region: RegionState(
            consecutive_failures=int(r.get("f", 0)),
            last_ok=r.get("ok"),
            last_response_ms=r.get("ms"),
        )
        for region, r in (data.get("regions") or {}).items()
    }
    try:
        status = MonitorStatus(monitor.status)
    except ValueError:
        status = MonitorStatus.PENDING
    return MonitorState(status=status, regions=regions, open_incident=bool(data.get("incident")))


def encode_state(state: MonitorState) -> dict[str, Any]:
    return {
        "regions": {
            region: {"f": r.consecutive_failures, "ok": r.last_ok, "ms": r.last_response_ms}
            for region, r in state.regions.items()
        },
        "incident": state.open_incident,
    }


def settings_of(monitor: Monitor, all_regions: Sequence[str]) -> Settings:
    return Settings(
        retries=monitor.retries,
        degraded_threshold_ms=monitor.degraded_threshold_ms,
        region_ids=tuple(monitor.region_ids or all_regions),
        quorum=monitor.quorum,
    )


def result_status(ok: bool, response_ms: float | None, threshold_ms: float | None) -> str:
    if not ok:
        return "down"
    if threshold_ms is not None and response_ms is not None and response_ms > threshold_ms:
        return "degraded"
    return "up"


@dataclass
class _DayTotals:
    total: int = 0
    up: int = 0
    down: int = 0
    degraded: int = 0
    response_ms_sum: float = 0.0
    response_count: int = 0
    histogram: Histogram = field(default_factory=Histogram)


class Ingester:
    def __init__(
        self,
        db: Database,
        broker: Broker,
        region_ids: Callable[[], Sequence[str]],
        max_batch: int = 1000,
        max_wait: float = 0.25,
        automation: TransitionHandler | None = None,
    ) -> None:
        self.automation = automation
        self.db = db
        self.broker = broker
        self.region_ids = region_ids
        self.max_batch = max_batch
        self.max_wait = max_wait
        self.written = 0

    async def run(self) -> None:
        while True:
            stop_if_cancelled()
            batch = await self.broker.next_results(self.max_batch, self.max_wait)
            try:
                await self.ingest(batch)
                progress()
            except Exception:
                # The batch is lost to this process only if the database keeps refusing it;
                # put it back once so a transient error costs nothing.
                log.exception("ingesting %d results failed; retrying once", len(batch))
                await asyncio.sleep(1)
                try:
                    await self.ingest(batch)
                except Exception:
                    log.exception("dropping %d results after a second failure", len(batch))

    async def ingest(self, reports: Sequence[CheckReport]) -> list[CheckResult]:
        """Store ``reports`` and move their monitors' status; returns the stored rows."""
        if not reports:
            return []
        async with self.db.worksession() as session:
            stored = await self._ingest(session, reports)
            # Wakes the alert sender for alerts written in this transaction.
            await commit_and_notify(session)
        self.written += len(stored)
        return stored

    async def _ingest(
        self, session: AsyncSession, reports: Sequence[CheckReport]
    ) -> list[CheckResult]:
        ids = {r.monitor_id for r in reports}
        monitors = {
            m.id: m for m in (await session.scalars(select(Monitor).where(Monitor.id.in_(ids))))
        }
        all_regions = self.region_ids()
        rows: list[dict[str, Any]] = []
        days: dict[tuple[str, str, str], _DayTotals] = {}
        actions: list[tuple[Monitor, IncidentAction, Outcome, datetime]] = []
        for report in sorted(reports, key=lambda r: r.checked_at):
            monitor = monitors.get(report.monitor_id)
            if monitor is None or not monitor.is_active:
                continue  # deleted or paused since the check was scheduled
            outcome = report.outcome
            transition = apply(
                decode_state(monitor),
                Result(report.region_id, outcome.ok, outcome.response_time_ms),
                settings_of(monitor, all_regions),
            )
            if transition.incident is not IncidentAction.NONE:
                actions.append((monitor, transition.incident, outcome, report.checked_at))
            monitor.state = encode_state(transition.state)
            monitor.status = transition.state.status.value
            if monitor.last_checked_at is None or report.checked_at > monitor.last_checked_at:
                monitor.last_checked_at = report.checked_at
            status = result_status(
                outcome.ok, outcome.response_time_ms, monitor.degraded_threshold_ms
            )
            rows.append(
                {
                    "monitor_id": monitor.id,
                    "region_id": report.region_id,
                    "status": status,
                    "status_code": outcome.status_code,
                    "response_time_ms": outcome.response_time_ms,
                    "error_kind": outcome.error_kind.value if outcome.error_kind else None,
                    "error": outcome.error,
                    "checked_at": report.checked_at,
                }
            )
            key = (monitor.id, report.region_id, report.checked_at.date().isoformat())
            day = days.setdefault(key, _DayTotals())
            day.total += 1
            setattr(day, status, getattr(day, status) + 1)
            if outcome.response_time_ms is not None:
                day.response_ms_sum += outcome.response_time_ms
                day.response_count += 1
                day.histogram.add(outcome.response_time_ms)
        if not rows:
            return []
        stored = list(
            (await session.scalars(insert(CheckResult).returning(CheckResult), rows)).all()
        )
        await self._add_days(session, days)
        await session.flush()
        if self.automation is not None:
            # After the insert, so the outage's first failure is among the stored results.
            for monitor, action, outcome, checked_at in actions:
                await self.automation.carry_out(session, monitor, action, outcome, checked_at)
        return stored

    async def _add_days(
        self, session: AsyncSession, days: dict[tuple[str, str, str], _DayTotals]
    ) -> None:
        """Merge the batch's day totals into the stored ones: one read, one upsert."""
        monitor_ids = {k[0] for k in days}
        day_keys = {k[2] for k in days}
        existing = {
            (a.monitor_id, a.region_id, a.day): a
            for a in await session.scalars(
                select(DailyAggregate).where(
                    DailyAggregate.monitor_id.in_(monitor_ids), DailyAggregate.day.in_(day_keys)
                )
            )
        }
        values = []
        for key, add in days.items():
            old = existing.get(key)
            histogram = add.histogram
            if old is not None:
                histogram = Histogram.from_json(old.histogram) + histogram
            values.append(
                {
                    "monitor_id": key[0],
                    "region_id": key[1],
                    "day": key[2],
                    "total": add.total + (old.total if old else 0),
                    "up": add.up + (old.up if old else 0),
                    "down": add.down + (old.down if old else 0),
                    "degraded": add.degraded + (old.degraded if old else 0),
                    "response_ms_sum": add.response_ms_sum + (old.response_ms_sum if old else 0),
                    "response_count": add.response_count + (old.response_count if old else 0),
                    "histogram": histogram.to_json(),
                }
            )
        for old in existing.values():
            session.expunge(old)  # the upsert below writes these rows
        upsert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
        statement = upsert(DailyAggregate).values(values)
        columns = (
            "total",
            "up",
            "down",
            "degraded",
            "response_ms_sum",
            "response_count",
            "histogram",
        )
        await session.execute(
            statement.on_conflict_do_update(
                index_elements=["monitor_id", "region_id", "day"],
                set_={c: getattr(statement.excluded, c) for c in columns},
            )
        )
