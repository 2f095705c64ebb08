"""GET /subscriptions/current, POST /subscriptions/upgrade and /downgrade."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body

from upwatch.billing.schemas import EmptyBody, SubscriptionChanged, SubscriptionStatus
from upwatch.billing.service import SubscriptionService
from upwatch.callers.dependencies import PersonUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.errors import problem_responses
from upwatch.kit.routes import SIGNED_IN, Routes

router = Routes("/subscriptions", "subscriptions", SIGNED_IN)


@router.get("/current", operation_id="currentSubscription")
async def current(user: PersonUser, session: Session, runtime: RuntimeDep) -> SubscriptionStatus:
    """The caller's plan, its limits, and measured usage against them."""
    return await SubscriptionService(session, runtime).status(user)


@router.post("/upgrade", operation_id="upgradeSubscription", responses=problem_responses(409))
async def upgrade(
    user: PersonUser,
    session: Session,
    runtime: RuntimeDep,
    _body: Annotated[EmptyBody | None, Body()] = None,
) -> SubscriptionChanged:
    """Move to the pro plan (409 when already on it, and always on a self-hosted service,
    `UPWATCH_EDITION=selfhosted`, where every account has a plan without limits)."""
    subscription = await SubscriptionService(session, runtime).upgrade(user)
    return SubscriptionChanged(message="Upgraded to pro", subscription=subscription)


@router.post("/downgrade", operation_id="downgradeSubscription", responses=problem_responses(409))
async def downgrade(
    user: PersonUser,
    session: Session,
    runtime: RuntimeDep,
    _body: Annotated[EmptyBody | None, Body()] = None,
) -> SubscriptionChanged:
    """Move back to the free plan; 409 listing in `exceeded` what is over the free limits."""
    subscription = await SubscriptionService(session, runtime).downgrade(user)
    return SubscriptionChanged(message="Downgraded to free", subscription=subscription)
