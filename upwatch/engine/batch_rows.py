"""The rows one ingested batch writes, gathered result by result: the results (timings in
the row), the monitors it moved, and the day, hour and histogram counts it adds to, each as
the parameter sets of one fixed-shape statement (engine/repository.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from upwatch.engine.broker import CheckReport
from upwatch.engine.certificates import CertificateChange, days_left
from upwatch.engine.repository import LockedMonitor
from upwatch.engine.status import IncidentAction
from upwatch.kit.histogram import DayTotals
from upwatch.models import HourlyCount
from upwatch.probes.outcome import Outcome

# monitor, region, and the day ("2026-11-25") or hour ("2026-11-25T14") counted in
SpanKey = tuple[str, str, str]


@dataclass
class BatchRows:
    results: list[dict[str, Any]] = field(default_factory=list)
    # Incident actions the status machine called for, carried out after the writes.
    actions: list[tuple[str, IncidentAction, Outcome, datetime]] = field(default_factory=list)
    # Certificate warnings to open or resolve (monitor id, change, checked at), after them.
    certificates: list[tuple[str, CertificateChange, datetime]] = field(default_factory=list)
    moved: dict[str, LockedMonitor] = field(default_factory=dict)
    days: dict[SpanKey, DayTotals] = field(default_factory=dict)
    hours: dict[SpanKey, dict[str, int]] = field(default_factory=dict)

    def add(
        self,
        monitor: LockedMonitor,
        report: CheckReport,
        status: str,
        in_window: bool,
    ) -> None:
        """Count one stored result in its monitor's day and hour."""
        outcome = report.outcome
        key = (monitor.id, report.region_id, report.checked_at.date().isoformat())
        day = self.days.get(key)
        if day is None:
            day = self.days[key] = DayTotals()
        day.total += 1
        setattr(day, status, getattr(day, status) + 1)
        hour_key = (monitor.id, report.region_id, HourlyCount.key_of(report.checked_at))
        hour = self.hours.get(hour_key)
        if hour is None:
            hour = self.hours[hour_key] = {"total": 0, "up": 0, "down": 0, "degraded": 0}
        hour["total"] += 1
        hour[status] += 1
        if in_window:
            day.maintenance_total += 1
            name = f"maintenance_{status}"
            setattr(day, name, getattr(day, name) + 1)
        if outcome.response_time_ms is not None:
            # As stored (whole microseconds), so a recount from the rows gives the same sums.
            stored_ms = round(outcome.response_time_ms * 1000) / 1000
            day.response_ms_sum += stored_ms
            day.response_count += 1
            day.histogram.add(stored_ms)

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

    def day_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "monitor_id": monitor_id,
                "region_id": region_id,
                "day": day_key,
                "total": add.total,
                "up": add.up,
                "down": add.down,
                "degraded": add.degraded,
                "response_ms_sum": add.response_ms_sum,
                "response_count": add.response_count,
                "response_ms_min": (add.histogram.observed or (None, None))[0],
                "response_ms_max": (add.histogram.observed or (None, None))[1],
                "maintenance_total": add.maintenance_total,
                "maintenance_up": add.maintenance_up,
                "maintenance_down": add.maintenance_down,
                "maintenance_degraded": add.maintenance_degraded,
            }
            for (monitor_id, region_id, day_key), add in self.days.items()
        ]

    def hour_rows(self) -> list[dict[str, Any]]:
        return [
            {"monitor_id": monitor_id, "region_id": region_id, "hour": hour_key, **counts}
            for (monitor_id, region_id, hour_key), counts in self.hours.items()
        ]

    def bucket_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "monitor_id": monitor_id,
                "region_id": region_id,
                "day": day_key,
                "bucket": bucket,
                "count": count,
            }
            for (monitor_id, region_id, day_key), add in self.days.items()
            for bucket, count in add.histogram.buckets()
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
