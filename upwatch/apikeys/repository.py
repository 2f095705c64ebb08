"""Every query of API keys."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select

from upwatch.callers.repository import KeyDirectory
from upwatch.models import ApiKey


class ApiKeyRepository(KeyDirectory):
    async def of_project(self, project_id: str) -> Sequence[ApiKey]:
        rows = await self.session.scalars(
            select(ApiKey)
            .where(ApiKey.project_id == project_id)
            .order_by(ApiKey.created_at, ApiKey.id)
        )
        return rows.all()

    async def of_project_by_id(self, project_id: str, key_id: str) -> ApiKey | None:
        key: ApiKey | None = await self.session.scalar(
            select(ApiKey).where(ApiKey.id == key_id, ApiKey.project_id == project_id)
        )
        return key

    async def add(self, key: ApiKey) -> ApiKey:
        self.session.add(key)
        await self.session.flush()
        return key

    async def revoke(self, project_id: str, key_id: str) -> bool:
        """Delete the key: the next request with it is refused."""
        result = await self.session.execute(
            delete(ApiKey).where(ApiKey.id == key_id, ApiKey.project_id == project_id)
        )
        return getattr(result, "rowcount", 0) == 1
