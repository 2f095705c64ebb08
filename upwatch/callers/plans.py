"""An account's plan: the one way requests and background jobs alike look it up."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.callers.repository import SubscriptionDirectory
from upwatch.kit.plans import Plan, PlanCatalog


async def plan_of(session: AsyncSession, catalog: PlanCatalog, user_id: str) -> Plan:
    """The plan ``user_id`` is on; an account without a subscription row has the default."""
    subscription = await SubscriptionDirectory(session).of(user_id)
    return catalog.get(subscription.plan if subscription else catalog.default_plan)
