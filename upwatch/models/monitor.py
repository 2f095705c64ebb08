from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, MappedColumn, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin
from upwatch.models.project import project_ref


def _monitor_key() -> MappedColumn[str]:
    """The monitor a row of figures counts for, first in its key; the figures go with it."""
    return mapped_column(
        String(32), ForeignKey("monitors.id", ondelete="CASCADE"), primary_key=True
    )


class Region(IdMixin, Base):
    """Where checks run from. `local` is built in; a worker for a region reports itself by
    updating ``last_seen_at``."""

    __tablename__ = "regions"

    code: Mapped[str] = mapped_column(String(50), unique=True)
    name: Mapped[str] = mapped_column(String(100))
    builtin: Mapped[bool] = mapped_column(Boolean, default=False)
    last_seen_at: Mapped[datetime | None]
    # Workers that beat at ``last_seen_at`` (a region is served by one or many).
    workers: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime]


class Monitor(IdMixin, TimestampMixin, Base):
    __tablename__ = "monitors"
    __table_args__ = (UniqueConstraint("project_id", "key"),)

    project_id: Mapped[str] = project_ref()
    name: Mapped[str] = mapped_column(String(100))
    type: Mapped[str] = mapped_column(String(20))
    url: Mapped[str | None] = mapped_column(String(2048))
    method: Mapped[str] = mapped_column(String(10), default="GET")
    headers: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Names of headers the user marked secret (Authorization, Cookie, Proxy-Authorization
    # always are); their values are masked in responses.
    secret_headers: Mapped[list[str]] = mapped_column(JSON, default=list)
    body: Mapped[str | None] = mapped_column(Text)
    expected_status_codes: Mapped[list[int]] = mapped_column(JSON, default=list)
    keyword: Mapped[str | None] = mapped_column(String(500))
    host: Mapped[str | None] = mapped_column(String(253))
    port: Mapped[int | None] = mapped_column(Integer)
    record_type: Mapped[str | None] = mapped_column(String(10))
    expected_value: Mapped[str | None] = mapped_column(String(500))
    interval_seconds: Mapped[int] = mapped_column(Integer)
    timeout_seconds: Mapped[float] = mapped_column(Float)
    retries: Mapped[int] = mapped_column(Integer, default=0)
    degraded_threshold_ms: Mapped[float | None] = mapped_column(Float)
    quorum: Mapped[int | None] = mapped_column(Integer)
    region_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    status: Mapped[str] = mapped_column(String(20), default="pending")
    # The status machine's memory (per-region failure counts), owned by the ingester.
    state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    last_checked_at: Mapped[datetime | None]
    # The response times of its last checks (RECENT_TIMES, oldest first; null where a check
    # had none), kept by the ingester with the state: the console's sparklines read them
    # with the monitor instead of searching its results.
    recent_ms: Mapped[list[float | None] | None] = mapped_column(JSON)
    heartbeat_token: Mapped[str | None] = mapped_column(String(64), unique=True)
    # Heartbeats: a cron schedule in ``timezone`` instead of a fixed interval, how late a ping
    # may be, and the job's own start and failure reports.
    schedule: Mapped[str | None] = mapped_column(String(100))
    timezone: Mapped[str | None] = mapped_column(String(64))
    grace_seconds: Mapped[int | None] = mapped_column(Integer)
    last_start_at: Mapped[datetime | None]
    last_fail_at: Mapped[datetime | None]
    # HTTP monitors: conditions on the response, [{source, operator, path?, value?}]
    # (``probes/assertions.py``).
    assertions: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    # Monitors of the same project this one depends on: while one of them is down, this one's
    # failures open no incident of their own (they are listed under the parent's).
    depends_on: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Who is paged, step by step, for its incidents; none: every provider of the project at once.
    escalation_policy_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("escalation_policies.id", ondelete="SET NULL"), index=True
    )
    last_ping_at: Mapped[datetime | None]
    # Config as code (kit/declared.py): the file's key, and its secrets' references.
    key: Mapped[str | None] = mapped_column(String(64))
    secret_refs: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # A type's own fields that no column above holds, by API name (``probes/kind.py``): a
    # new type is a module, not a migration. Secret ones are masked in every response.
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, server_default="{}")
    # Alert conditions (``engine/status.py``): successes in a row before a down monitor is
    # up again; a degraded status held for ``alert_on_degraded`` checks opens a
    # low-severity incident (None: never); the baseline rule (None: off).
    success_threshold: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    alert_on_degraded: Mapped[int | None] = mapped_column(Integer)
    baseline_factor: Mapped[float | None] = mapped_column(Float)
    baseline_min_samples: Mapped[int | None] = mapped_column(Integer)
    # TLS-speaking types: days before the certificate's expiry that open a warning.
    certificate_warning_days: Mapped[list[int] | None] = mapped_column(JSON(none_as_null=True))


RECENT_TIMES = 20


class CheckResult(Base):
    """One check of one monitor from one region. Integer keys: there are many of these."""

    __tablename__ = "check_results"
    __table_args__ = (Index("ix_check_results_monitor_time", "monitor_id", "checked_at"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    monitor_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("monitors.id", ondelete="CASCADE")
    )
    # Made where the check ran, so a batch stored twice (a retry after the database dropped
    # the connection mid-commit) inserts each result once.
    report_id: Mapped[str] = mapped_column(String(32), unique=True)
    region_id: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(10))  # up, down, degraded
    status_code: Mapped[int | None] = mapped_column(Integer)
    response_time_ms: Mapped[float | None] = mapped_column(Float)
    error_kind: Mapped[str | None] = mapped_column(String(30))
    error: Mapped[str | None] = mapped_column(Text)
    checked_at: Mapped[datetime]
    # What a failed check saw, bounded and redacted (``probes/evidence.py``); None when it
    # passed. Shown to the project's members and in alerts, never on a public page.
    evidence: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    # Whole days the target's certificate had left, where the check saw one.
    certificate_days: Mapped[int | None] = mapped_column(Integer)


class CheckTiming(Base):
    """What a probe measured per phase of one check (milliseconds; None when the phase did not
    happen). Its own table, keyed by the result, so raw timings can be kept for less time than
    the results they belong to."""

    __tablename__ = "check_timings"

    result_id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"),
        ForeignKey("check_results.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    )
    dns_ms: Mapped[float | None] = mapped_column(Float)
    connect_ms: Mapped[float | None] = mapped_column(Float)
    tls_ms: Mapped[float | None] = mapped_column(Float)
    first_byte_ms: Mapped[float | None] = mapped_column(Float)
    total_ms: Mapped[float | None] = mapped_column(Float)


class DailyAggregate(Base):
    """Per monitor, region and UTC day: counts, so statistics over long periods never scan raw
    results. Every count is a sum, added to in SQL (``value = value + excluded.value``), so
    concurrent writers never lose a count; the response-time histogram is in
    ``daily_histogram_buckets`` for the same reason. The smallest and largest time are kept
    the same way (the lesser or greater of stored and added) and bound the percentiles."""

    __tablename__ = "daily_aggregates"
    # A monitor's recent days without walking every region's year (usage.storage, retention).
    __table_args__ = (Index("ix_daily_aggregates_monitor_day", "monitor_id", "day"),)

    monitor_id: Mapped[str] = _monitor_key()
    region_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    total: Mapped[int] = mapped_column(Integer, default=0)
    up: Mapped[int] = mapped_column(Integer, default=0)
    down: Mapped[int] = mapped_column(Integer, default=0)
    degraded: Mapped[int] = mapped_column(Integer, default=0)
    response_ms_sum: Mapped[float] = mapped_column(Float, default=0.0)
    response_count: Mapped[int] = mapped_column(Integer, default=0)
    # None while response_count is 0, and for days stored before 0007 whose range was unknown.
    response_ms_min: Mapped[float | None] = mapped_column(Float)
    response_ms_max: Mapped[float | None] = mapped_column(Float)
    # Of the counts above, the checks made during a maintenance window: SLA figures leave them
    # out, from these sums alone.
    maintenance_total: Mapped[int] = mapped_column(Integer, default=0)
    maintenance_up: Mapped[int] = mapped_column(Integer, default=0)
    maintenance_down: Mapped[int] = mapped_column(Integer, default=0)
    maintenance_degraded: Mapped[int] = mapped_column(Integer, default=0)


class HourlyCount(Base):
    """Per monitor, region and UTC hour ("2026-11-25T14"): how many checks and of which
    outcome. Added to in SQL like the day counts; kept about three days (the retention job),
    so a 24-hour uptime reads at most 25 rows per monitor and region, and raw results only
    for the part of an hour where its window begins."""

    __tablename__ = "hourly_counts"

    monitor_id: Mapped[str] = _monitor_key()
    region_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    hour: Mapped[str] = mapped_column(String(13), primary_key=True)
    total: Mapped[int] = mapped_column(Integer, default=0)
    up: Mapped[int] = mapped_column(Integer, default=0)
    down: Mapped[int] = mapped_column(Integer, default=0)
    degraded: Mapped[int] = mapped_column(Integer, default=0)

    @staticmethod
    def key_of(moment: datetime) -> str:
        """The UTC hour ``moment`` falls in, as stored ("2026-11-25T14")."""
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H")


class HistogramBucket(Base):
    """One bucket of a day's response-time histogram (``kit.histogram``): a row per non-empty
    bucket, whose count a batch adds to in SQL."""

    __tablename__ = "daily_histogram_buckets"

    monitor_id: Mapped[str] = _monitor_key()
    region_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    bucket: Mapped[int] = mapped_column(SmallInteger, primary_key=True, autoincrement=False)
    count: Mapped[int] = mapped_column(Integer, default=0)
