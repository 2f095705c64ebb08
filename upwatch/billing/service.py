"""Plan rules: what an owner may still create, measured usage, moving between plans."""

from __future__ import annotations

from dataclasses import dataclass

from upwatch.billing.repository import SubscriptionRepository, UsageRepository
from upwatch.billing.schemas import Limits, SubscriptionStatus, Usage, UsageItem
from upwatch.callers.plans import plan_of
from upwatch.kit.errors import Conflict, PlanLimitExceeded
from upwatch.kit.plans import Plan
from upwatch.models import Subscription, User
from upwatch.retention.service import stored_bytes
from upwatch.runtime import DomainService, uses

MEGABYTE = 1024 * 1024


def usage_item(current: float, limit: float) -> UsageItem:
    percentage = round(current / limit * 100, 2) if limit else 0.0
    return UsageItem(current=current, limit=limit, percentage=percentage)


@dataclass(frozen=True)
class Exceeded:
    limit: str
    current: float
    allowed: float


class PlanLimits(DomainService):
    """The one check every creating operation calls before it creates."""

    subscriptions = uses(SubscriptionRepository)
    usage = uses(UsageRepository)

    async def plan_of(self, user_id: str) -> Plan:
        return await plan_of(self.session, self.runtime.catalog, user_id)

    async def require(self, owner_id: str, limit: str, current: int, adding: int = 1) -> None:
        """Refuse with 402 when ``current + adding`` would pass the owner's ``limit``.

        Call ``lock`` first and measure ``current`` after it, so concurrent creations of one
        owner are serialised and none slips past the count.
        """
        within(await self.plan_of(owner_id), limit, current, adding)

    async def lock(self, owner_id: str) -> Plan:
        """Serialise the owner's limit checks (see ``require``); answers the owner's plan,
        read by the same statement, for ``within`` and ``frequency_within``."""
        return self._plan_named(await self.subscriptions.lock(owner_id))

    async def lock_owner_of(self, project_id: str) -> Plan:
        """``lock`` for the owner of ``project_id`` before its access is read, so that access
        and the count the limit needs can then be read by one statement
        (``ProjectRepository.access_with``). Locking a project the caller may not open
        reveals nothing: the request ends in 404 and its transaction rolls back."""
        return self._plan_named(await self.subscriptions.lock_owner_of(project_id))

    def _plan_named(self, name: str | None) -> Plan:
        catalog = self.runtime.catalog
        return catalog.get(name if name is not None else catalog.default_plan)

    async def require_channel(self, owner_id: str, channel: str) -> None:
        plan = await self.plan_of(owner_id)
        if channel not in plan.notificationChannels:
            raise PlanLimitExceeded(
                f"notificationChannels: {channel} is not in the {plan.name} plan"
            )

    async def require_frequency(self, owner_id: str, interval_seconds: int) -> None:
        frequency_within(await self.plan_of(owner_id), interval_seconds)


def within(plan: Plan, limit: str, current: int, adding: int = 1) -> None:
    """Refuse with 402 when ``current + adding`` would pass the plan's ``limit``."""
    allowed = plan.limit(limit)
    if current + adding > allowed:
        raise PlanLimitExceeded(f"{limit}: the plan allows {allowed}, and {current} are in use")


def frequency_within(plan: Plan, interval_seconds: int) -> None:
    """Refuse with 402 an interval shorter than the plan checks."""
    minutes = plan.checkFrequencyMinutes
    if interval_seconds < minutes * 60:
        raise PlanLimitExceeded(
            f"checkFrequencyMinutes: the plan checks at most every {minutes} minutes"
        )


class SubscriptionService(DomainService):
    subscriptions = uses(SubscriptionRepository)
    usage = uses(UsageRepository)
    limits = uses(PlanLimits)

    async def _subscription(self, user: User) -> Subscription:
        subscription = await self.subscriptions.of(user.id)
        if subscription is None:
            subscription = Subscription(
                user_id=user.id, plan=self.runtime.catalog.default_plan, status="active"
            )
            self.session.add(subscription)
            await self.session.flush()
        return subscription

    async def measured(self, user: User, plan: Plan) -> Usage:
        # Six decimals: a small account stores kilobytes, which two decimals would show as 0.
        stored = await self.usage.storage_bytes(user.id) + await stored_bytes(self.session, user.id)
        storage_mb = round(stored / MEGABYTE, 6)
        monitors, pages, projects, members = await self.usage.counts(user.id)
        return Usage(
            monitors=usage_item(monitors, plan.monitorCount),
            statusPages=usage_item(pages, plan.statusPageCount),
            teamMembers=usage_item(members, plan.teamMembers),
            projects=usage_item(projects, plan.projectCount),
            apiCalls=usage_item(
                await self.runtime.meter.today(self.session, user.id), plan.apiCallsPerDay
            ),
            storage=usage_item(storage_mb, plan.storageLimit),
        )

    async def status(self, user: User) -> SubscriptionStatus:
        subscription = await self._subscription(user)
        plan = self.runtime.catalog.get(subscription.plan)
        limits = plan.limits()
        limits["notificationChannels"] = list(plan.notificationChannels)
        return SubscriptionStatus(
            currentPlan=plan.name,
            status=subscription.status,
            limits=Limits(**limits),
            usage=await self.measured(user, plan),
        )

    async def upgrade(self, user: User) -> SubscriptionStatus:
        if not self.runtime.catalog.upgrades:
            raise Conflict(
                "this self-hosted service has no plan to upgrade to: every account already "
                "has one without limits (UPWATCH_EDITION=selfhosted)"
            )
        subscription = await self._subscription(user)
        target = self.runtime.catalog.upgrade_plan
        if subscription.plan == target:
            raise Conflict(f"the account is already on the {target} plan")
        subscription.plan, subscription.status = target, "active"
        await self.session.flush()
        self.runtime.plan_cache.forget(user.id)
        return await self.status(user)

    async def downgrade(self, user: User) -> SubscriptionStatus:
        subscription = await self._subscription(user)
        target = self.runtime.catalog.default_plan
        if subscription.plan == target:
            raise Conflict(f"the account is already on the {target} plan")
        plan = self.runtime.catalog.get(target)
        # Hold the owner's limit lock, so nothing is created between the check and the move.
        await self.limits.lock(user.id)
        usage = await self.measured(user, plan)
        busiest = await self.usage.busiest_project_seats(user.id)
        checks = {
            "projectCount": usage.projects,
            "teamMembers": usage.teamMembers,
            "monitorCount": usage.monitors,
            "statusPageCount": usage.statusPages,
            "storageLimit": usage.storage,
            "teamMembersPerProject": usage_item(busiest, plan.teamMembersPerProject),
        }
        exceeded = [
            {"limit": name, "current": item.current, "allowed": item.limit}
            for name, item in checks.items()
            if item.current > item.limit
        ]
        if exceeded:
            raise Conflict(
                "the account uses more than the "
                f"{target} plan allows: " + ", ".join(e["limit"] for e in exceeded),  # type: ignore[misc]
                extensions={"exceeded": exceeded},
            )
        subscription.plan, subscription.status = target, "active"
        await self.session.flush()
        self.runtime.plan_cache.forget(user.id)
        return await self.status(user)
