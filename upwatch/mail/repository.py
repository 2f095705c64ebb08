"""Every statement on the mail outbox: pick due messages, claim one, record an attempt, and the
administrators' listing and resend."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, update

from upwatch.kit.repository import Listed, Repository
from upwatch.models.mail import MailMessage


class MailOutboxRepository(Repository):
    async def due(self, now: datetime, limit: int) -> Sequence[tuple[str, datetime]]:
        """Ids and due times of pending messages due by ``now``, the longest-waiting first."""
        rows = await self.session.execute(
            select(MailMessage.id, MailMessage.next_attempt_at)
            .where(MailMessage.status == "pending", MailMessage.next_attempt_at <= now)
            .order_by(MailMessage.next_attempt_at)
            .limit(limit)
        )
        return [(message_id, due_at) for message_id, due_at in rows.all()]

    async def claim(self, message_id: str, due_at: datetime, hidden_until: datetime) -> bool:
        """Move the message's due time to ``hidden_until``; only one claim on ``due_at`` wins."""
        return await self.changed_one(
            update(MailMessage)
            .where(
                MailMessage.id == message_id,
                MailMessage.status == "pending",
                MailMessage.next_attempt_at == due_at,
            )
            .values(next_attempt_at=hidden_until)
        )

    async def get(self, message_id: str) -> MailMessage | None:
        return await self.session.get(MailMessage, message_id)

    async def record(self, message_id: str, values: dict[str, Any]) -> None:
        """Store an attempt's outcome (attempts, error, status, next due time, body)."""
        await self.session.execute(
            update(MailMessage).where(MailMessage.id == message_id).values(**values)
        )

    async def newest_first(self, limit: int, offset: int) -> Listed[MailMessage]:
        """One page of the outbox, newest first, with its total (the administrators' list)."""
        newest = MailMessage.created_at.desc(), MailMessage.id
        return await self.page_of(select(MailMessage).order_by(*newest), limit, offset)

    async def requeue(self, message_id: str, now: datetime) -> bool:
        """Make an unsent message due at ``now`` with a fresh set of attempts; False when it
        is unknown or was sent (a sender recording a delivery meanwhile wins)."""
        return await self.changed_one(
            update(MailMessage)
            .where(MailMessage.id == message_id, MailMessage.status != "sent")
            .values(status="pending", attempts=0, next_attempt_at=now)
        )
