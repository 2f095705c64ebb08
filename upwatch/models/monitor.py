from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    Sequence,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    select,
)
from sqlalchemy.orm import Mapped, MappedColumn, column_property, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin
from upwatch.models.compact import CheckStatus, EpochMillis, Micros, epoch_ms
from upwatch.models.project import project_ref


def _monitor_key() -> MappedColumn[str]:
    """The monitor a row of figures counts for, first in its key; the figures go with it."""
    return mapped_column(
        String(32), ForeignKey("monitors.id", ondelete="CASCADE"), primary_key=True
    )


# Numbers given to each new monitor and region: by these sequences on PostgreSQL, by a
# trigger (the largest so far plus one) on SQLite, which has no sequences (migration 0027).
MONITOR_NUMBERS = Sequence("monitor_numbers")
REGION_NUMBERS = Sequence("region_numbers")


class Region(IdMixin, Base):
    """Where checks run from. `local` is built in; a worker for a region reports itself by
    updating ``last_seen_at``."""

    __tablename__ = "regions"

    code: Mapped[str] = mapped_column(String(50), unique=True)
    # The region's key in check rows: a small number instead of its 32-character id.
    number: Mapped[int | None] = mapped_column(
        SmallInteger, REGION_NUMBERS, unique=True, index=True
    )
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
    # The monitor's key in check rows: a number instead of its 32-character id.
    number: Mapped[int | None] = mapped_column(Integer, MONITOR_NUMBERS, unique=True, index=True)
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
    """One check of one monitor from one region, in one compact row (about 40 bytes on
    SQLite with its key; ``docs/storage.md``).

    The key is the monitor's number, the time in milliseconds and the region's number: a
    clustered table on SQLite (``WITHOUT ROWID``), so the key is the only index, rows of one
    monitor lie together in time order, and a result stored twice (a batch retried after the
    database dropped the connection mid-commit) is refused by the key itself. The phase
    timings are in the row; ``monitoring_data`` retention empties them."""

    __tablename__ = "check_results"
    __table_args__ = (
        ForeignKeyConstraint(["monitor_number"], ["monitors.number"], ondelete="CASCADE"),
        {"sqlite_with_rowid": False},
    )

    # Key order: a monitor's results in time order whatever their region, so its history
    # and its latest checks are one range of the key (regions interleave within it).
    monitor_number: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    checked_at: Mapped[datetime] = mapped_column("checked_at_ms", EpochMillis, primary_key=True)
    region_number: Mapped[int] = mapped_column(SmallInteger, primary_key=True, autoincrement=False)
    status: Mapped[str] = mapped_column(CheckStatus)  # up, down, degraded
    status_code: Mapped[int | None] = mapped_column(Integer)
    response_time_ms: Mapped[float | None] = mapped_column("response_us", Micros)
    error_kind: Mapped[str | None] = mapped_column(String(30))
    error: Mapped[str | None] = mapped_column(Text)
    # What a failed check saw, bounded and redacted (``probes/evidence.py``); None when it
    # passed. Shown to the project's members and in alerts, never on a public page.
    evidence: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    # Whole days the target's certificate had left, where the check saw one.
    certificate_days: Mapped[int | None] = mapped_column(Integer)
    # What the probe measured per phase (None when the phase did not happen or was not
    # measured, and once ``monitoring_data`` retention has passed).
    dns_ms: Mapped[float | None] = mapped_column("dns_us", Micros)
    connect_ms: Mapped[float | None] = mapped_column("connect_us", Micros)
    tls_ms: Mapped[float | None] = mapped_column("tls_us", Micros)
    first_byte_ms: Mapped[float | None] = mapped_column("first_byte_us", Micros)
    total_ms: Mapped[float | None] = mapped_column("total_us", Micros)

    # The monitor's and the region's ids, read only where a query asks for them
    # (``undefer``): the row itself holds their numbers.
    monitor_id: Mapped[str] = column_property(
        select(Monitor.id).where(Monitor.number == monitor_number).scalar_subquery(),
        deferred=True,
        raiseload=True,
    )
    region_id: Mapped[str] = column_property(
        select(Region.id).where(Region.number == region_number).scalar_subquery(),
        deferred=True,
        raiseload=True,
    )

    @property
    def id(self) -> str:
        """The API's id of the result: its key, unique across the service."""
        return f"{self.monitor_number}-{self.region_number}-{epoch_ms(self.checked_at)}"

    @property
    def timings(self) -> dict[str, float | None] | None:
        """The phase timings, or None when none was measured (or they were purged)."""
        values = {name: getattr(self, name) for name in TIMING_FIELDS}
        return values if any(v is not None for v in values.values()) else None


TIMING_FIELDS = ("dns_ms", "connect_ms", "tls_ms", "first_byte_ms", "total_ms")


class UnflushedBatch(Base):
    """A stored batch of results whose day, hour and histogram counts are still only in the
    memory of the ingester that stored it. Written in the batch's transaction and deleted in
    the one that adds its counts, so after a crash (kill -9) the batches still here are
    exactly the results whose counts were lost, and they are counted again from their stored
    rows (``engine/aggregates.py``)."""

    __tablename__ = "unflushed_batches"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    created_at: Mapped[datetime]
    # The batch's results' keys: (monitor number, region number, epoch ms) packed as
    # little-endian int32, int16, int64 (``engine/aggregates.py``).
    result_keys: Mapped[bytes] = mapped_column(LargeBinary)


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
