"""The queries of single sign-on: an account by its provider's subject."""

from __future__ import annotations

from sqlalchemy import select

from upwatch.accounts.repository import SSO_PROVIDER, UserRepository
from upwatch.models import User

PROVIDER = SSO_PROVIDER


class SsoAccounts(UserRepository):
    async def by_subject(self, provider_id: str) -> User | None:
        return await self.session.scalar(
            select(User).where(User.provider == PROVIDER, User.provider_id == provider_id)
        )
