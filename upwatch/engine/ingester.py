"""Turning check reports into stored results, daily aggregates and monitor status.

One batch is one transaction: the batch's monitors are locked, results whose key (monitor,
region, millisecond) is stored already are skipped, and only the new results move the day
aggregates (increments in SQL; or, with ``aggregate_flush_seconds``, a row of
``unflushed_batches`` now and the counts from memory later: ``engine/aggregates.py``) and each
monitor's status (through the pure status machine), written back with the batch. A batch
stored twice therefore counts once, whichever attempt committed. Every statement has one fixed
shape run with many parameter sets, and no ORM object is made on this path.

A batch that fails stays in the ingester (``pending``) and is retried with back-off until the
database takes it: while it is away, the broker's bounded result queue fills and holds the
workers back, so memory stays bounded and nothing measured is lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.engine.aggregates import Aggregates, add_counts
from upwatch.engine.batch_rows import BatchRows, result_row
from upwatch.engine.broker import Broker, CheckReport
from upwatch.engine.certificates import STATE_KEY, CertificateChange, crossed, days_left
from upwatch.engine.ports import MaintenanceCalendar, TransitionHandler
from upwatch.engine.repository import IngestRepository, LockedMonitor
from upwatch.engine.status import (
    IncidentAction,
    Result,
    apply,
    decode_state,
    encode_state,
    result_status,
    settings_of,
    without_future,
)
from upwatch.kit.backoff import backoff
from upwatch.kit.db import Database, after_commit, commit_and_notify
from upwatch.kit.ids import new_id
from upwatch.kit.logs import log_event
from upwatch.kit.metrics import Metrics
from upwatch.kit.progress import progress, stop_if_cancelled
from upwatch.kit.targets import target_of
from upwatch.models import RECENT_TIMES, Monitor
from upwatch.models.compact import epoch_ms, from_epoch_ms
from upwatch.probes.outcome import Outcome
from upwatch.probes.registry import KINDS

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Ingester:
    db: Database
    broker: Broker
    region_ids: Callable[[], Sequence[str]]
    max_batch: int = 1000
    max_wait: float = 0.25
    automation: TransitionHandler | None = None
    metrics: Metrics | None = None
    retry_first_seconds: float = 0.5
    retry_max_seconds: float = 30.0
    # Told of each monitor whose result is dropped because the monitor was deleted or
    # paused, e.g. deleted with its project, which tells the scheduler nothing.
    gone: Callable[[str], None] | None = None
    maintenance: MaintenanceCalendar | None = None
    # > 0: a batch's day, hour and histogram counts are held in memory and flushed this
    # often (``engine/aggregates.py``); 0: written in the batch's transaction.
    aggregate_flush_seconds: float = 0.0
    aggregates: Aggregates = field(init=False)
    written: int = field(default=0, init=False)  # results stored, since start
    failures: int = field(default=0, init=False)  # failed attempts to store a batch
    # Results dropped: from a region the monitor is not checked in.
    foreign: int = field(default=0, init=False)
    # The batch taken from the broker and not stored yet. On the object, not in run(), so
    # a supervisor that restarts run() after a crash picks the same batch up again.
    pending: list[CheckReport] = field(default_factory=list, init=False)
    # Each region's number in check rows, by its id: read at the first batch and again
    # when a report names a region created since (regions are never deleted).
    region_numbers: dict[str, int] = field(default_factory=dict, init=False)
    _failing: int = field(default=0, init=False)  # consecutive failed attempts of an outage
    # Whether the batches a previous process left unflushed were counted (at the first run).
    _recovered: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.aggregates = Aggregates(self.db, self.maintenance, self.aggregate_flush_seconds)

    async def run(self) -> None:
        """Store batches forever; a batch that fails is kept and retried, never dropped.

        First, count the batches a killed process left unflushed (whatever this process's
        setting): a failure raises, and the supervisor restarts this role to try again."""
        if not self._recovered:
            recovered = await self.aggregates.recover()
            if recovered:
                log.info("counted %d unflushed batches again from their stored results", recovered)
            self._recovered = True
        while True:
            stop_if_cancelled()
            if not self.pending:
                self.pending = await self.broker.next_results(self.max_batch, self.max_wait)
                self._report_pending()
            try:
                await self.ingest(self.pending)
            except Exception as exc:
                stop_if_cancelled()
                self._failed(exc)
                delay = backoff(self._failing, self.retry_first_seconds, self.retry_max_seconds)
                await asyncio.sleep(delay.total_seconds())
                continue
            await self.broker.ack_results(self.pending)
            if self._failing:
                log.warning(
                    "storing results works again after %d failed attempts; nothing was lost",
                    self._failing,
                )
                self._failing = 0
            self.pending = []
            self._report_pending()
            progress()

    def _failed(self, exc: Exception) -> None:
        self.failures += 1
        self._failing += 1
        if self.metrics is not None:
            self.metrics.ingest_failures.inc()
        if self._failing == 1:
            # One line (with its stack) per outage, not one per retry.
            log.error(
                "storing %d results failed; keeping them and retrying with back-off "
                "(up to %.0f s) until the database takes them",
                len(self.pending),
                self.retry_max_seconds,
                exc_info=exc,
            )

    def _report_monitors(self, fresh: Sequence[tuple[LockedMonitor, CheckReport]]) -> None:
        """Each monitor's status and last response time for /metrics. Set while the batch
        holds the monitors' locks: a pause or delete commits after it, so the scheduler's
        removal of the series comes after this, never before."""
        metrics = self.metrics
        if metrics is None:
            return
        latest = {monitor.id: (monitor, report) for monitor, report in fresh}  # by checked_at
        for monitor, report in latest.values():
            outcome = report.outcome
            metrics.monitor_checked(
                monitor.id,
                monitor.project_id,
                monitor.status,
                outcome.response_time_ms,
                monitor.last_checked_at,
            )
            metrics.monitor_described(monitor.id, monitor.name, monitor.type, target_of(monitor))
            expires_at = certificate_expiry(outcome.details)
            if expires_at is not None or outcome.ok:
                # A check that failed before it saw a certificate leaves the last one known.
                metrics.monitor_certificate(monitor.id, expires_at)

    def _report_pending(self) -> None:
        if self.metrics is not None:
            self.metrics.results_pending.set(len(self.pending))

    async def ingest(self, reports: Sequence[CheckReport]) -> list[str]:
        """Store ``reports`` and move their monitors' status; returns the report ids this
        call stored (none for reports stored before)."""
        if not reports:
            return []
        async with self.db.worksession() as session:
            stored = await self._ingest(session, reports)
            # Wakes the alert sender for alerts written in this transaction.
            await commit_and_notify(session)
        self.written += len(stored)
        return stored

    def _move(
        self,
        session: AsyncSession,
        monitor: LockedMonitor,
        report: CheckReport,
        all_regions: Sequence[str],
        actions: list[tuple[str, IncidentAction, Outcome, datetime]],
    ) -> None:
        """Feed one result to the monitor's status machine; note the incident action it calls
        for, and log a status change once committed."""
        outcome = report.outcome
        # Which check is newer goes by when each was due (the scheduler's clock, not the
        # worker's), never later than now here: a time ahead of this clock would make every
        # later result look late.
        now = time.time()
        transition = apply(
            without_future(decode_state(monitor), now),
            Result(
                report.region_id,
                outcome.ok,
                outcome.response_time_ms,
                min(report.due_at, now),
                inconclusive=outcome.inconclusive,
            ),
            settings_of(monitor, all_regions),
        )
        if transition.incident is not IncidentAction.NONE:
            actions.append((monitor.id, transition.incident, outcome, report.checked_at))
        if transition.changed:
            # Told once committed: a batch that fails and is retried changes nothing yet.
            after_commit(
                session,
                partial(
                    _log_status_change,
                    monitor.id,
                    monitor.name,
                    monitor.project_id,
                    transition.previous_status.value,
                    transition.state.status.value,
                    report.region_id,
                ),
            )
        kept = (monitor.state or {}).get(STATE_KEY)
        monitor.state = encode_state(transition.state)
        if kept is not None:
            monitor.state[STATE_KEY] = kept  # the certificate warnings', beside the machine's
        monitor.status = transition.state.status.value

    async def _ingest(self, session: AsyncSession, reports: Sequence[CheckReport]) -> list[str]:
        """One batch in the caller's transaction: the new results of active monitors are
        stored, move their monitors and the counts, and then any incident actions run."""
        repository = IngestRepository(session)
        fresh = await self._fresh(repository, reports)
        if not fresh:
            return []
        held = await self._held(session, fresh)
        rows = self._gather(session, fresh, held)
        await repository.insert_results(rows.results)
        await repository.save_monitors(rows.monitor_rows())
        if self.aggregates.deferred:
            await self.aggregates.journal(session, rows.keys, rows.counts)
        else:
            await add_counts(session, rows.counts)
        self._report_monitors(fresh)
        await self._carry_out(session, rows.actions)
        await self._warn(session, rows.certificates)
        return [r.id for _m, r in fresh]

    async def _fresh(
        self, repository: IngestRepository, reports: Sequence[CheckReport]
    ) -> list[tuple[LockedMonitor, CheckReport]]:
        """Lock the batch's monitors; the reports to store, oldest check first: not stored
        before, of a monitor that is still active, from a region it is checked in."""
        unique = {r.id: r for r in reports}  # a report delivered twice in one batch
        monitors = await repository.lock_monitors({r.monitor_id for r in unique.values()})
        await self._know_regions(repository, unique.values())
        ordered = sorted(unique.values(), key=lambda r: r.checked_at)
        stored_before = await repository.stored_keys(
            [m.number for m in monitors.values()], ordered[0].checked_at, ordered[-1].checked_at
        )
        fresh: list[tuple[LockedMonitor, CheckReport]] = []
        for report in ordered:
            monitor = monitors.get(report.monitor_id)
            if monitor is None or not monitor.is_active:
                if self.gone is not None:  # deleted or paused since the check was scheduled
                    self.gone(report.monitor_id)
            elif monitor.region_ids and report.region_id not in monitor.region_ids:
                # Not a region this monitor is checked from (a stale job, or a worker that
                # is not what it says): stored, it would move statistics and the quorum.
                self.foreign += 1
            elif report.region_id not in self.region_numbers:
                self.foreign += 1  # a region that does not exist
            else:
                key = self.key_of(monitor, report)
                if key not in stored_before:
                    # Also a second report in the batch with the same key: a result is
                    # one per monitor, region and millisecond.
                    stored_before.add(key)
                    fresh.append((monitor, report))
        return fresh

    def key_of(self, monitor: LockedMonitor, report: CheckReport) -> tuple[int, int, datetime]:
        """The stored key of ``report``'s result: numbers, and its time to the millisecond."""
        return (
            monitor.number,
            self.region_numbers[report.region_id],
            from_epoch_ms(epoch_ms(report.checked_at)),
        )

    async def _know_regions(
        self, repository: IngestRepository, reports: Iterable[CheckReport]
    ) -> None:
        """Read the regions' numbers again when a report names a region not known yet."""
        if any(r.region_id not in self.region_numbers for r in reports):
            self.region_numbers = await repository.region_numbers()

    async def _held(
        self, session: AsyncSession, fresh: Sequence[tuple[LockedMonitor, CheckReport]]
    ) -> list[bool]:
        """Which results fall in a maintenance window of their monitor."""
        if self.maintenance is None:
            return [False] * len(fresh)
        return await self.maintenance.in_maintenance(
            session, [(m.id, m.project_id, r.checked_at) for m, r in fresh]
        )

    def _gather(
        self,
        session: AsyncSession,
        fresh: Sequence[tuple[LockedMonitor, CheckReport]],
        held: Sequence[bool],
    ) -> BatchRows:
        """Result by result, oldest first: its row, its monitor's move (none during
        maintenance) and last check, and its counts."""
        all_regions = self.region_ids()
        rows = BatchRows()
        for (monitor, report), in_window in zip(fresh, held, strict=True):
            outcome = report.outcome
            status = result_status(
                outcome.ok, outcome.response_time_ms, monitor.degraded_threshold_ms
            )
            region_number = self.region_numbers[report.region_id]
            rows.results.append(result_row(monitor.number, region_number, report, status))
            if not in_window:
                self._move(session, monitor, report, all_regions, rows.actions)
                _watch_certificate(monitor, report, rows)
            if monitor.last_checked_at is None or report.checked_at >= monitor.last_checked_at:
                monitor.last_checked_at = report.checked_at
                # The newest checks only: one that arrives late is older than the last kept.
                recent = monitor.recent_ms or []
                monitor.recent_ms = [*recent[-(RECENT_TIMES - 1) :], outcome.response_time_ms]
            rows.moved[monitor.id] = monitor
            rows.add(monitor, region_number, report, status, in_window)
        return rows

    async def _carry_out(
        self,
        session: AsyncSession,
        actions: Sequence[tuple[str, IncidentAction, Outcome, datetime]],
    ) -> None:
        if self.automation is None or not actions:
            return
        # After the insert, so the outage's first failure is among the stored results.
        # The rare transition loads the monitor as the domain knows it (with its state
        # as just written).
        for monitor_id, action, outcome, checked_at in actions:
            row = await session.get(Monitor, monitor_id, populate_existing=True)
            if row is not None:
                await self.automation.carry_out(session, row, action, outcome, checked_at)

    async def _warn(
        self,
        session: AsyncSession,
        changes: Sequence[tuple[str, CertificateChange, datetime]],
    ) -> None:
        if self.automation is None or not changes:
            return
        for monitor_id, change, checked_at in changes:
            row = await session.get(Monitor, monitor_id, populate_existing=True)
            if row is not None:
                await self.automation.certificate_changed(session, row, change, checked_at)


def _watch_certificate(monitor: LockedMonitor, report: CheckReport, rows: BatchRows) -> None:
    """Open or resolve the monitor's certificate warnings for the days its check saw (types
    that read a certificate only; a check that saw none changes nothing)."""
    kind = KINDS.get(monitor.type)
    details = report.outcome.details
    days = days_left(details)
    if kind is None or not kind.speaks_tls or days is None:
        return
    not_after = details.get("notAfter")
    change, entry = crossed(
        days,
        not_after if isinstance(not_after, str) else None,
        monitor.certificate_warning_days,
        monitor.state,
        new_id,
    )
    state = dict(monitor.state or {})
    if state.get(STATE_KEY) != entry:
        state[STATE_KEY] = entry
        monitor.state = state
        rows.moved[monitor.id] = monitor
    if change:
        rows.certificates.append((monitor.id, change, report.checked_at))


def certificate_expiry(details: Mapping[str, object]) -> float | None:
    """When the certificate a check saw expires (its ``notAfter``, Unix time), if it saw one
    (TLS checks); a report from a remote worker is data, so anything else reads as none."""
    not_after = details.get("notAfter")
    if not isinstance(not_after, str):
        return None
    try:
        moment = datetime.fromisoformat(not_after)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp()


def _log_status_change(
    monitor_id: str, name: str, project_id: str, previous: str, status: str, region_id: str
) -> None:
    log_event(
        log,
        "monitor.status_changed",
        "monitor %s (%s) is %s, was %s (result from region %s)",
        monitor_id,
        name,
        status,
        previous,
        region_id,
        monitor_id=monitor_id,
        project_id=project_id,
        status=status,
        previous_status=previous,
        region_id=region_id,
    )
