"""The rows one ingested batch writes, gathered result by result: the results (timings in
the row), the monitors it moved, and the day, hour and histogram counts it adds to (written
in the batch's transaction, or held in memory by ``engine/aggregates.py``), each as the
parameter sets of one fixed-shape statement (engine/repository.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from upwatch.engine.aggregates import Counts, ResultKey
from upwatch.engine.broker import CheckReport
from upwatch.engine.certificates import CertificateChange, days_left
from upwatch.engine.repository import LockedMonitor
from upwatch.engine.status import IncidentAction
from upwatch.models.compact import epoch_ms
from upwatch.probes.outcome import Outcome


@dataclass
class BatchRows:
    results: list[dict[str, Any]] = field(default_factory=list)
    # Incident actions the status machine called for, carried out after the writes.
    actions: list[tuple[str, IncidentAction, Outcome, datetime]] = field(default_factory=list)
    # Certificate warnings to open or resolve (monitor id, change, checked at), after them.
    certificates: list[tuple[str, CertificateChange, datetime]] = field(default_factory=list)
    moved: dict[str, LockedMonitor] = field(default_factory=dict)
    # The day, hour and histogram counts, and the stored keys of the results counted.
    counts: Counts = field(default_factory=Counts)
    keys: list[ResultKey] = field(default_factory=list)

    def add(
        self,
        monitor: LockedMonitor,
        region_number: int,
        report: CheckReport,
        status: str,
        in_window: bool,
    ) -> None:
        """Count one stored result in its monitor's day and hour, and note its key."""
        self.counts.add(
            monitor.id,
            report.region_id,
            report.checked_at,
            status,
            report.outcome.response_time_ms,
            in_window,
        )
        self.keys.append((monitor.number, region_number, epoch_ms(report.checked_at)))

    def monitor_rows(self) -> list[dict[str, Any]]:
        """In id order, the order the batch locked them in."""
        return [
            {
                "m_id": m.id,
                "m_status": m.status,
                "m_state": m.state,
                "m_checked": m.last_checked_at,
                "m_recent": m.recent_ms,
            }
            for m in sorted(self.moved.values(), key=lambda m: m.id)
        ]


def result_row(
    monitor_number: int, region_number: int, report: CheckReport, status: str
) -> dict[str, Any]:
    """The result's compact row (``models.CheckResult``), by column name: the column types
    turn the time, the status and the durations into their stored integers."""
    outcome = report.outcome
    measured = outcome.timings
    return {
        "monitor_number": monitor_number,
        "region_number": region_number,
        "checked_at_ms": report.checked_at,
        "status": status,
        "status_code": outcome.status_code,
        "response_us": outcome.response_time_ms,
        "error_kind": outcome.error_kind.value if outcome.error_kind else None,
        "error": outcome.error,
        # Failures only, so a passing result stays as small as before.
        "evidence": None if outcome.ok or outcome.evidence is None else dict(outcome.evidence),
        "certificate_days": days_left(outcome.details),
        "dns_us": None if measured is None else measured.dns_ms,
        "connect_us": None if measured is None else measured.connect_ms,
        "tls_us": None if measured is None else measured.tls_ms,
        "first_byte_us": None if measured is None else measured.first_byte_ms,
        "total_us": None if measured is None else measured.total_ms,
    }
