"""Every statement on ``browser_sessions``."""

from __future__ import annotations

from sqlalchemy import delete, select

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
