from __future__ import annotations

from sqlalchemy import select

from upwatch.kit.repository import Listed, Repository
from upwatch.models import ContactSubmission


class ContactRepository(Repository):
    async def get(self, submission_id: str) -> ContactSubmission | None:
        return await self.session.get(ContactSubmission, submission_id)

    async def newest_first(self, limit: int, offset: int) -> Listed[ContactSubmission]:
        """One page of the submissions, newest first, with their total."""
        newest = ContactSubmission.created_at.desc(), ContactSubmission.id
        return await self.page_of(select(ContactSubmission).order_by(*newest), limit, offset)
