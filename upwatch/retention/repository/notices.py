"""Retention notices: the batches announced to an owner, their e-mails, and their end once
purged."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, select, update

from upwatch.kit.db import dialect_insert
from upwatch.kit.repository import Repository
from upwatch.models import MailMessage, RetentionNotice
from upwatch.retention.repository.scope import NO_SYNC, rowcount


class NoticeRepository(Repository):
    async def notices(self, owner_id: str) -> Sequence[RetentionNotice]:
        query = select(RetentionNotice).where(RetentionNotice.user_id == owner_id)
        return (await self.session.scalars(query)).all()

    async def add_notice(self, notice: RetentionNotice) -> bool:
        """False when a run elsewhere made the same notice first."""
        insert = dialect_insert(self.session)
        result = await self.session.execute(
            insert(RetentionNotice)
            .values(
                id=notice.id,
                user_id=notice.user_id,
                data_type=notice.data_type,
                expiry_date=notice.expiry_date,
                cutoff=notice.cutoff,
                retention_days=notice.retention_days,
                count=notice.count,
                size_bytes=notice.size_bytes,
                earlier_attempts=0,
                created_at=notice.created_at,
                updated_at=notice.updated_at,
            )
            .on_conflict_do_nothing(index_elements=["user_id", "data_type", "expiry_date"])
        )
        return rowcount(result) == 1

    async def set_mail(self, notice_ids: Sequence[str], mail_id: str, now: datetime) -> None:
        await self.session.execute(
            update(RetentionNotice)
            .where(RetentionNotice.id.in_(notice_ids))
            .values(mail_id=mail_id, updated_at=now)
            .execution_options(**NO_SYNC)
        )

    async def drop_notices(self, notice_ids: Sequence[str]) -> None:
        if notice_ids:
            await self.session.execute(
                delete(RetentionNotice)
                .where(RetentionNotice.id.in_(notice_ids))
                .execution_options(**NO_SYNC)
            )

    async def mark_purged(self, notice_id: str, now: datetime) -> None:
        await self.session.execute(
            update(RetentionNotice)
            .where(RetentionNotice.id == notice_id)
            .values(purged_at=now, updated_at=now)
            .execution_options(**NO_SYNC)
        )

    async def upcoming(
        self, owner_id: str, now: datetime
    ) -> Sequence[tuple[RetentionNotice, MailMessage | None]]:
        """The owner's notices of data not yet expired, soonest first, with their e-mail."""
        query = (
            select(RetentionNotice, MailMessage)
            .outerjoin(MailMessage, MailMessage.id == RetentionNotice.mail_id)
            .where(
                RetentionNotice.user_id == owner_id,
                RetentionNotice.purged_at.is_(None),
                RetentionNotice.expiry_date > now,
            )
            .order_by(RetentionNotice.expiry_date, RetentionNotice.data_type)
        )
        return [(notice, mail) for notice, mail in (await self.session.execute(query)).all()]

    async def mails(self, mail_ids: Sequence[str]) -> dict[str, MailMessage]:
        return await self.by_ids(MailMessage, mail_ids)

    async def remail(
        self, notice_ids: Sequence[str], mail_id: str, attempts: int, now: datetime
    ) -> None:
        """Announce again with a new e-mail, counting the failed one's attempts."""
        await self.session.execute(
            update(RetentionNotice)
            .where(RetentionNotice.id.in_(notice_ids))
            .values(
                mail_id=mail_id,
                earlier_attempts=RetentionNotice.earlier_attempts + attempts,
                updated_at=now,
            )
            .execution_options(**NO_SYNC)
        )

    async def forget_purged(self, owner_id: str, before: datetime) -> None:
        await self.session.execute(
            delete(RetentionNotice)
            .where(
                RetentionNotice.user_id == owner_id,
                RetentionNotice.purged_at.is_not(None),
                RetentionNotice.purged_at < before,
            )
            .execution_options(**NO_SYNC)
        )
