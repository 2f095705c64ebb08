from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin
from upwatch.models.project import project_ref


class NotificationProvider(IdMixin, TimestampMixin, Base):
    __tablename__ = "notification_providers"
    __table_args__ = (UniqueConstraint("project_id", "key"),)

    project_id: Mapped[str] = project_ref()
    type: Mapped[str] = mapped_column(String(20))
    name: Mapped[str] = mapped_column(String(100))
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # holds secrets
    is_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    quiet_hours_start: Mapped[str | None] = mapped_column(String(5))  # HH:MM, owner's zone
    quiet_hours_end: Mapped[str | None] = mapped_column(String(5))
    # Remind every so many minutes while an incident it was paged for is open and unacknowledged.
    repeat_every_minutes: Mapped[int | None] = mapped_column(Integer)
    # Config as code (kit/declared.py): the file's key, and its secrets' references.
    key: Mapped[str | None] = mapped_column(String(64))
    secret_refs: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class Alert(Base):
    """One message to one destination: an outbox row written with the state change it reports.

    The destination is a provider (``provider_id``), or a member's personal channel from
    their settings (``user_id`` and the channel in ``provider_type``, ``provider_id`` null).

    Integer ids give the order alerts were written in, which the sender keeps per destination
    and incident (a recovery is never delivered before its outage alert).
    """

    __tablename__ = "alerts"
    __table_args__ = (Index("ix_alerts_due", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    # History outlives its provider: the type and name are kept on the row.
    provider_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("notification_providers.id", ondelete="SET NULL"), index=True
    )
    provider_type: Mapped[str] = mapped_column(String(20))  # the channel
    provider_name: Mapped[str] = mapped_column(String(100))
    # A personal alert's recipient; deleted with the account, like the rest of its data.
    user_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[str] = project_ref()
    incident_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("incidents.id", ondelete="CASCADE"), index=True
    )
    event: Mapped[str] = mapped_column(String(30))  # incident.opened, incident.resolved, test
    facts: Mapped[dict[str, Any]] = mapped_column(JSON)  # AlertEvent.to_json()
    # pending -> sent | failed; suppressed from the start (quiet hours, disabled, plan).
    status: Mapped[str] = mapped_column(String(20))
    reason: Mapped[str | None] = mapped_column(Text)  # why suppressed or failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]
    created_at: Mapped[datetime]


class AlertAttempt(Base):
    """Every delivery attempt, for the alert history."""

    __tablename__ = "alert_attempts"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    alert_id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"),
        ForeignKey("alerts.id", ondelete="CASCADE"),
        index=True,
    )
    attempt: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(String(20))  # sent, retry, failed
    error: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[float | None]
    attempted_at: Mapped[datetime]
