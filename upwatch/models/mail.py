from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from upwatch.kit.db import Base, IdMixin, TimestampMixin


class MailMessage(IdMixin, TimestampMixin, Base):
    """An outgoing e-mail; written in the transaction that caused it, sent afterwards."""

    __tablename__ = "mail_outbox"
    __table_args__ = (Index("ix_mail_outbox_due", "status", "next_attempt_at"),)

    to_address: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(String(300))
    body: Mapped[str] = mapped_column(Text)
    # Further headers, e.g. List-Unsubscribe on status-page notices (values are single lines).
    headers: Mapped[dict[str, str] | None] = mapped_column(JSON)
    category: Mapped[str] = mapped_column(String(50))
    # pending -> sent, or pending -> failed once mail_max_attempts is spent.
    status: Mapped[str] = mapped_column(String(20), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    last_error: Mapped[str | None] = mapped_column(Text)
    sent_at: Mapped[datetime | None]
    # When delivery was last tried (retention notices show it as lastNotificationAttempt).
    last_attempt_at: Mapped[datetime | None]
