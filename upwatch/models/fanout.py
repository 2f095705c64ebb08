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

from upwatch.kit.db import Base, IdMixin


class SubscriberNotice(IdMixin, Base):
    """One change a status page's subscribers hear of (an incident opened, updated or
    resolved; maintenance announced, started or ended): the small row written in the
    transaction of the change. The fan-out (``statuspages/fanout.py``) expands it in batches
    into one delivery per subscriber, moving ``cursor`` (the last subscriber id done) in the
    transaction of each batch, so a crash resumes where the last batch committed."""

    __tablename__ = "subscriber_notices"
    __table_args__ = (Index("ix_subscriber_notices_due", "done", "due_at"),)

    status_page_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("status_pages.id", ondelete="CASCADE"), index=True
    )
    # A window's notices go with it (edited: its pending ones are written again).
    maintenance_window_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("maintenance_windows.id", ondelete="CASCADE"), index=True
    )
    # incident.opened, incident.updated, incident.resolved, maintenance.announced, ...
    event: Mapped[str] = mapped_column(String(40))
    # The page's components the change touches; null: the whole page.
    component_ids: Mapped[list[str] | None] = mapped_column(JSON)
    subject: Mapped[str] = mapped_column(String(300))
    text: Mapped[str] = mapped_column(Text)
    # What a webhook subscriber receives as ``data`` (facts captured at write time).
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Not before (maintenance started/ended are written ahead), then the claim's lease.
    due_at: Mapped[datetime]
    cursor: Mapped[str | None] = mapped_column(String(32))
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    delivered: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]


class SubscriberDelivery(Base):
    """A notice to one webhook or Slack subscriber, sent by the subscriber sender with
    retries (e-mail subscribers' notices are rows of the mail outbox instead). One per
    notice and subscriber: the unique pair refuses a second."""

    __tablename__ = "subscriber_deliveries"
    __table_args__ = (
        UniqueConstraint("notice_id", "subscriber_id"),
        Index("ix_subscriber_deliveries_due", "status", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    notice_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("subscriber_notices.id", ondelete="CASCADE")
    )
    subscriber_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("status_page_subscribers.id", ondelete="CASCADE"), index=True
    )
    # The Standard Webhooks message id (the same on every attempt: receivers deduplicate).
    message_id: Mapped[str] = mapped_column(String(40))
    # pending -> sent, or pending -> failed once the attempts are spent.
    status: Mapped[str] = mapped_column(String(10), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    last_error: Mapped[str | None] = mapped_column(Text)
    sent_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
