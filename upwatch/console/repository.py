"""Every statement on ``browser_sessions``."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.models import BrowserSession


class SessionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, row: BrowserSession) -> None:
        self.session.add(row)
        await self.session.flush()

    async def by_hash(self, token_hash: str) -> BrowserSession | None:
        query = select(BrowserSession).where(BrowserSession.token_hash == token_hash)
        return (await self.session.scalars(query)).first()

    async def remove(self, token_hash: str) -> None:
        await self.session.execute(
            delete(BrowserSession).where(BrowserSession.token_hash == token_hash)
        )
