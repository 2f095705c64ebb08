"""Every statement on ``browser_sessions``."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update

from upwatch.kit.repository import Repository
from upwatch.models import BrowserSession


class SessionRepository(Repository):
    async def by_hash(self, token_hash: str) -> BrowserSession | None:
        query = select(BrowserSession).where(BrowserSession.token_hash == token_hash)
        return (await self.session.scalars(query)).first()

    async def remove(self, token_hash: str) -> None:
        await self.session.execute(
            delete(BrowserSession).where(BrowserSession.token_hash == token_hash)
        )

    async def touch(self, session_id: str, now: datetime) -> None:
        await self.session.execute(
            update(BrowserSession).where(BrowserSession.id == session_id).values(last_used_at=now)
        )
