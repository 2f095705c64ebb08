from __future__ import annotations

from upwatch.admin.schemas import AdminUserItem, OutboxMailOut
from upwatch.admin.service import AdminService
from upwatch.billing.schemas import AdminUserUpdate
from upwatch.callers.dependencies import AdminUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.errors import problem_responses
from upwatch.kit.pagination import PageParams
from upwatch.kit.routes import Routes

router = Routes("/admin", "admin", (400, 401, 403, 422, 429, 500))


@router.get("/users", operation_id="adminListUsers")
async def list_users(
    _admin: AdminUser, session: Session, runtime: RuntimeDep, page: PageParams
) -> list[AdminUserItem]:
    """Every account with its plan and subscription status, newest first (admin, super_admin)."""
    items, total = await AdminService(session, runtime).list_users(page.limit, page.offset)
    page.total(total)
    return items


@router.updates("adminUpdateUser", 404, path="/users/{id}")
async def update_user(
    id: str, body: AdminUserUpdate, admin: AdminUser, session: Session, runtime: RuntimeDep
) -> AdminUserItem:
    """Set an account's roles, plan and subscription status (admin; only a super_admin grants
    or changes super_admin)."""
    return await AdminService(session, runtime).update_user(admin, id, body)


@router.get("/mail", operation_id="adminListMail")
async def list_mail(
    _admin: AdminUser, session: Session, runtime: RuntimeDep, page: PageParams
) -> list[OutboxMailOut]:
    """The mail outbox, newest first (admin): every e-mail the service wrote, sent or not,
    with its delivery status. Without SMTP settings mail stays here unsent (and is written
    to the log in full). Tokens in the links of password-reset, invitation and status-page
    subscription mail (confirm and unsubscribe links) are masked."""
    items, total = await AdminService(session, runtime).list_mail(page.limit, page.offset)
    page.total(total)
    return items


@router.post(
    "/mail/{id}/resend", operation_id="adminResendMail", responses=problem_responses(404, 409)
)
async def resend_mail(
    id: str, admin: AdminUser, session: Session, runtime: RuntimeDep
) -> OutboxMailOut:
    """Send an unsent message (pending or failed) again (admin): it is due at once with a
    fresh set of attempts. Without SMTP settings it stays in the outbox and is written to the
    log in full again. 409 for a message that was sent, or whose secret link was removed
    after it failed."""
    return await AdminService(session, runtime).resend_mail(admin, id)
