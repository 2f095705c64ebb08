from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.accounts.repository import UserRepository
from upwatch.admin.schemas import AdminUserItem


class AdminService:
    def __init__(self, session: AsyncSession) -> None:
        self.users = UserRepository(session)

    async def list_users(self, limit: int, offset: int) -> tuple[list[AdminUserItem], int]:
        rows = await self.users.list_with_subscriptions(limit, offset)
        items = [
            AdminUserItem(
                id=user.id,
                email=user.email,
                firstName=user.first_name,
                lastName=user.last_name,
                roles=user.roles,
                subscription="pro" if sub is not None and sub.plan == "pro" else "free",
                subscriptionStatus=sub.status if sub is not None else "active",
                createdAt=user.created_at,
            )
            for user, sub in rows
        ]
        return items, await self.users.count()
