"""The operators' pages: every account with its plan, and the contact submissions.

Only administrators reach them; to anyone else they do not exist (404), as in the API.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import ValidationError

from upwatch.admin.service import AdminService
from upwatch.billing.schemas import AdminUserUpdate
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.contact.schemas import ContactUpdate
from upwatch.contact.service import ContactService
from upwatch.kit.errors import ProblemError

router = APIRouter(prefix="/app/admin")
ADMIN_ROWS = 500


def _admin(page: Page) -> Page:
    if not page.user.is_admin:
        page.not_found("page")
    return page


@router.get("")
async def admin_home(page: SignedInPage) -> Response:
    return _admin(page).redirect("/app/admin/users")


@router.get("/users", openapi_extra=offers("adminListUsers"))
async def users_page(page: SignedInPage) -> Response:
    _admin(page)
    users, total = await AdminService(page.session, page.runtime).list_users(ADMIN_ROWS, 0)
    return page.html(
        "admin_users.html",
        title="Accounts",
        section="admin",
        users=users,
        total=total,
        plans=sorted(page.runtime.catalog.plans),
    )


@router.post("/users/{user_id}", openapi_extra=offers("adminUpdateUser"))
async def change_user(user_id: str, page: SignedInPage) -> Response:
    form = await _admin(page).form()
    try:
        body = AdminUserUpdate(plan=form.get("plan") or None)
        item = await AdminService(page.session, page.runtime).update_user(page.user, user_id, body)
    except (ProblemError, ValidationError) as exc:
        _status, errors = page.refused(exc, "account")
        return page.redirect("/app/admin/users", f"Not changed: {'; '.join(errors.values())}")
    return page.redirect("/app/admin/users", f"{item.email} is on the {item.subscription} plan.")


@router.get("/contact", openapi_extra=offers("listContactSubmissions"))
async def contact_page(page: SignedInPage) -> Response:
    _admin(page)
    items, total = await ContactService(page.session, page.runtime).newest_first(ADMIN_ROWS, 0)
    return page.html(
        "admin_contact.html", title="Contact submissions", section="admin", items=items, total=total
    )


@router.get("/contact/{submission_id}")
async def submission_page(submission_id: str, page: SignedInPage) -> Response:
    _admin(page)
    found = await ContactService(page.session, page.runtime).get(submission_id)
    if found is None:
        page.not_found("contact submission")
    return page.html(
        "admin_submission.html", title=found.subject, section="admin", submission=found
    )


@router.post("/contact/{submission_id}", openapi_extra=offers("followUpContact"))
async def follow_up(submission_id: str, page: SignedInPage) -> Response:
    form = await _admin(page).form()
    try:
        body = ContactUpdate(
            contacted=form.get("contacted") == "on", admin_notes=form.get("notes") or None
        )
        await ContactService(page.session, page.runtime).follow_up(submission_id, body)
    except (ProblemError, ValidationError) as exc:
        _status, errors = page.refused(exc, "contact submission")
        return page.redirect(
            f"/app/admin/contact/{submission_id}", f"Not saved: {'; '.join(errors.values())}"
        )
    return page.redirect(f"/app/admin/contact/{submission_id}", "Saved.")
