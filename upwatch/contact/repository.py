from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.models import ContactSubmission


class ContactRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, submission: ContactSubmission) -> ContactSubmission:
        self.session.add(submission)
        await self.session.flush()
        return submission

    async def get(self, submission_id: str) -> ContactSubmission | None:
        return await self.session.get(ContactSubmission, submission_id)

    async def newest_first(self, limit: int, offset: int) -> Sequence[ContactSubmission]:
        query = (
            select(ContactSubmission)
            .order_by(ContactSubmission.created_at.desc(), ContactSubmission.id)
            .limit(limit)
            .offset(offset)
        )
        return (await self.session.scalars(query)).all()

    async def count(self) -> int:
        total = await self.session.scalar(select(func.count()).select_from(ContactSubmission))
        return int(total or 0)
