from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin


class RetentionNotice(IdMixin, TimestampMixin, Base):
    """A batch of one owner's data of one type that goes at ``expiry_date``: the rows older
    than ``cutoff`` and not covered by an earlier notice (seed 19)."""

    __tablename__ = "retention_notifications"
    __table_args__ = (
        UniqueConstraint("user_id", "data_type", "expiry_date"),
        Index("ix_retention_notifications_due", "purged_at", "expiry_date"),
    )

    user_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    # monitoring_data, incident_data, alert_history, check_results
    data_type: Mapped[str] = mapped_column(String(20))
    expiry_date: Mapped[datetime]
    cutoff: Mapped[datetime]
    # The plan's retention it was made for: a plan change makes a new notice.
    retention_days: Mapped[int] = mapped_column(Integer)
    count: Mapped[int] = mapped_column(BigInteger)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    # The e-mail announcing it (one e-mail may announce several notices of one run).
    mail_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("mail_outbox.id", ondelete="SET NULL"), index=True
    )
    # Delivery attempts of earlier e-mails for this notice that failed for good.
    earlier_attempts: Mapped[int] = mapped_column(Integer, default=0)
    purged_at: Mapped[datetime | None]


class RetentionRun(Base):
    """Each owner's retention work: the last UTC day it was done, and who holds it now.
    Claimed with one conditional UPDATE, so two processes never work on one owner at once."""

    __tablename__ = "retention_runs"

    user_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    done_day: Mapped[str | None] = mapped_column(String(10))  # YYYY-MM-DD, UTC
    claim: Mapped[str | None] = mapped_column(String(32))
    claimed_until: Mapped[datetime | None]
    # What the last run measured (usage.storage): result rows kept up to ``through_day``,
    # and the first day whose results are still kept.
    result_rows: Mapped[int] = mapped_column(BigInteger, default=0)
    kept_from_day: Mapped[str | None] = mapped_column(String(10))
    through_day: Mapped[str | None] = mapped_column(String(10))


class IncidentDay(Base):
    """Incidents per monitor and day of start, rolled up from the incidents retention
    deletes, so figures over the days aggregates keep (SLA, MTTR) survive the purge."""

    __tablename__ = "incident_days"

    project_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    # "" for an incident of the project rather than of one monitor.
    monitor_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    incidents: Mapped[int] = mapped_column(Integer, default=0)
    duration_seconds: Mapped[float] = mapped_column(Float, default=0.0)
