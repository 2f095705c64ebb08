from __future__ import annotations

from upwatch.accounts.repository import UserRepository
from upwatch.admin.schemas import AdminUserItem, OutboxMailOut
from upwatch.audit import kinds
from upwatch.audit.service import record
from upwatch.billing.repository import SubscriptionRepository
from upwatch.billing.schemas import AdminUserUpdate
from upwatch.kit.errors import Conflict, Forbidden, NotFound, ValidationFailed
from upwatch.mail.repository import MailOutboxRepository
from upwatch.mail.sender import SCRUBBED_BODY
from upwatch.models import Subscription, User
from upwatch.runtime import DomainService, uses


def admin_item(user: User, sub: Subscription | None) -> AdminUserItem:
    return AdminUserItem(
        id=user.id,
        email=user.email,
        firstName=user.first_name,
        lastName=user.last_name,
        roles=user.roles,
        subscription=sub.plan if sub is not None else "free",
        subscriptionStatus=sub.status if sub is not None else "active",
        createdAt=user.created_at,
    )


class AdminService(DomainService):
    users = uses(UserRepository)
    subscriptions = uses(SubscriptionRepository)
    mail = uses(MailOutboxRepository)

    async def list_users(self, limit: int, offset: int) -> tuple[list[AdminUserItem], int]:
        rows = await self.users.list_with_subscriptions(limit, offset)
        return [admin_item(user, sub) for user, sub in rows], await self.users.count()

    async def update_user(self, caller: User, user_id: str, body: AdminUserUpdate) -> AdminUserItem:
        """Set another account's roles and plan. Only a super_admin may grant super_admin or
        change a super_admin's roles."""
        user = await self.users.get(user_id)
        if user is None:
            raise NotFound("no such user")
        is_root = "super_admin" in caller.roles
        roles_before = ",".join(user.roles)
        if body.roles is not None and set(body.roles) != set(user.roles):
            touches_root = "super_admin" in body.roles or "super_admin" in user.roles
            if touches_root and not is_root:
                raise Forbidden("only a super_admin may grant or change super_admin")
            user.roles = list(dict.fromkeys(body.roles))
        subscription = await self.subscriptions.of(user.id)
        if subscription is None:
            subscription = Subscription(
                user_id=user.id, plan=self.runtime.catalog.default_plan, status="active"
            )
            self.session.add(subscription)
        if body.plan is not None:
            if body.plan not in self.runtime.catalog.plans:
                raise ValidationFailed.on("plan", f"unknown plan {body.plan!r}")
            subscription.plan = body.plan
        if body.subscriptionStatus is not None:
            subscription.status = body.subscriptionStatus
        await record(
            self.session,
            kinds.ADMIN_ACTION,
            self.runtime.clock.now(),
            actor=caller,
            account_id=user.id,
            target_type="account",
            target_id=user.id,
            target_label=user.email,
            details={
                "action": "update_user",
                "rolesFrom": roles_before,
                "rolesTo": ",".join(user.roles),
                "plan": subscription.plan,
                "subscriptionStatus": subscription.status,
            },
        )
        await self.session.flush()
        await self.session.refresh(user)
        self.runtime.plan_cache.forget(user.id)
        return admin_item(user, subscription)

    async def list_mail(self, limit: int, offset: int) -> tuple[list[OutboxMailOut], int]:
        rows, total = await self.mail.newest_first(limit, offset)
        return [OutboxMailOut.model_validate(m) for m in rows], total

    async def resend_mail(self, caller: User, mail_id: str) -> OutboxMailOut:
        """Send an unsent message again (pending or failed); a sent one is never sent twice."""
        message = await self.mail.get(mail_id)
        if message is None:
            raise NotFound("no such message")
        if message.status == "sent":
            raise Conflict("this message was sent; only unsent messages can be resent")
        if message.body == SCRUBBED_BODY:
            raise Conflict(
                "this message's secret link was removed when it failed; "
                "the person can ask for a new one"
            )
        if not await self.runtime.mailer.resend(self.session, message):
            raise Conflict("this message was sent meanwhile; only unsent messages can be resent")
        await record(
            self.session,
            kinds.ADMIN_ACTION,
            self.runtime.clock.now(),
            actor=caller,
            target_type="mail",
            target_id=message.id,
            target_label=message.to_address,
            details={"action": "resend_mail", "category": message.category},
        )
        return OutboxMailOut.model_validate(message)
