"""The operators' pages: every account with its plan, the contact submissions, the mail
outbox and the probe regions.

Only administrators reach them; to anyone else they do not exist (404), as in the API.
"""

from __future__ import annotations

from typing import Final, get_args

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import ValidationError

from upwatch.admin.service import AdminService
from upwatch.billing.schemas import AdminUserUpdate, SubscriptionState
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.console.words import PLAN_NAMES, SUBSCRIPTION_STATES
from upwatch.contact.schemas import ContactUpdate
from upwatch.contact.service import ContactService
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_
from upwatch.kit.schemas import Role
from upwatch.monitors.endpoints import create_region, list_regions
from upwatch.monitors.schemas import RegionIn
from upwatch.monitors.service import MonitorService

router = APIRouter(prefix="/app/admin")
ADMIN_ROWS = 500
MAIL_ROWS = 50
# How the pages name the accounts' roles, plans and subscription states and the outbox's
# states (translated where shown); an operator's own plans are shown by their names.
ROLE_WORDS: Final = {
    "user": N_("user"),
    "admin": N_("admin"),
    "project_manager": N_("project manager"),
    "super_admin": N_("super admin"),
}
MAIL_STATES: Final = {"pending": N_("pending"), "sent": N_("sent"), "failed": N_("failed")}
# The built-in region's name (engine/embedded.py), translated where the regions are listed.
LOCAL_REGION_NAME: Final = N_("Local")


def _admin(page: Page) -> Page:
    if not page.user.is_admin:
        page.not_found(N_("page"))
    return page


@router.get("")
async def admin_home(page: SignedInPage) -> Response:
    _admin(page)
    return page.html("admin.html", title=page.gettext("Administration"), section="admin")


@router.get("/users", openapi_extra=offers("adminListUsers"))
async def users_page(page: SignedInPage) -> Response:
    _admin(page)
    users, total = await AdminService(page.session, page.runtime).list_users(ADMIN_ROWS, 0)
    return page.html(
        "admin_users.html",
        title=page.gettext("Accounts"),
        section="admin",
        users=users,
        total=total,
        plans=sorted(page.runtime.catalog.plans),
        roles=get_args(Role),
        states=get_args(SubscriptionState),
        role_words=ROLE_WORDS,
        plan_words=PLAN_NAMES,
        state_words=SUBSCRIPTION_STATES,
    )


def _user_update(form: dict[str, str]) -> AdminUserUpdate:
    """A checkbox per role (a form carries one value a name); "roles" marks a form that has them,
    so a form of the plan alone leaves the roles as they are."""
    roles = [role for role in get_args(Role) if form.get(f"role-{role}") == "on"]
    return AdminUserUpdate.model_validate(
        {
            "plan": form.get("plan") or None,
            "roles": roles if "roles" in form else None,
            "subscriptionStatus": form.get("status") or None,
        }
    )


@router.post("/users/{user_id}", openapi_extra=offers("adminUpdateUser"))
async def change_user(user_id: str, page: SignedInPage) -> Response:
    form = await _admin(page).form()
    try:
        body = _user_update(form)
        item = await AdminService(page.session, page.runtime).update_user(page.user, user_id, body)
    except (ProblemError, ValidationError) as exc:
        _status, errors = page.refused(exc, N_("account"))
        why = "; ".join(errors.values())
        return page.redirect(
            "/app/admin/users", page.gettext("Not changed: %(why)s") % {"why": why}
        )
    plan = item.subscription
    named = page.gettext(PLAN_NAMES[plan]) if plan in PLAN_NAMES else plan
    return page.redirect(
        "/app/admin/users",
        page.gettext("%(address)s saved: the %(plan)s plan.")
        % {"address": item.email, "plan": named},
    )


@router.get("/contact", openapi_extra=offers("listContactSubmissions"))
async def contact_page(page: SignedInPage) -> Response:
    _admin(page)
    items, total = await ContactService(page.session, page.runtime).newest_first(ADMIN_ROWS, 0)
    return page.html(
        "admin_contact.html",
        title=page.gettext("Contact submissions"),
        section="admin",
        items=items,
        total=total,
    )


@router.get("/contact/{submission_id}")
async def submission_page(submission_id: str, page: SignedInPage) -> Response:
    _admin(page)
    found = await ContactService(page.session, page.runtime).get(submission_id)
    if found is None:
        page.not_found(N_("contact submission"))
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
        _status, errors = page.refused(exc, N_("contact submission"))
        why = "; ".join(errors.values())
        return page.redirect(
            f"/app/admin/contact/{submission_id}",
            page.gettext("Not saved: %(why)s") % {"why": why},
        )
    return page.redirect(f"/app/admin/contact/{submission_id}", page.gettext("Saved."))


@router.get("/mail", openapi_extra=offers("adminListMail"))
async def mail_page(page: SignedInPage, offset: int = Query(0, ge=0)) -> Response:
    _admin(page)
    items, total = await AdminService(page.session, page.runtime).list_mail(MAIL_ROWS, offset)
    return page.html(
        "admin_mail.html",
        title=page.gettext("Mail outbox"),
        section="admin",
        items=items,
        total=total,
        offset=offset,
        rows=MAIL_ROWS,
        mail_states=MAIL_STATES,
    )


@router.post("/mail/{mail_id}/resend", openapi_extra=offers("adminResendMail"))
async def resend_mail(mail_id: str, page: SignedInPage) -> Response:
    _admin(page)
    async with page.button(N_("message"), "/app/admin/mail", N_("Not sent again")):
        item = await AdminService(page.session, page.runtime).resend_mail(page.user, mail_id)
    return page.redirect(
        "/app/admin/mail",
        page.gettext("The message to %(to)s is due again.") % {"to": item.to},
    )


async def _regions_page(page: Page, status: int = 200, **context: object) -> Response:
    regions = await list_regions(page.user, page.session, page.runtime)
    context.setdefault("form", {})
    context.setdefault("errors", {})
    return page.html(
        "admin_regions.html",
        status,
        title=page.gettext("Regions"),
        section="admin",
        regions=regions,
        **context,
    )


@router.get("/regions", openapi_extra=offers("listRegions"))
async def regions_page(page: SignedInPage) -> Response:
    return await _regions_page(_admin(page))


@router.post("/regions", openapi_extra=offers("createRegion"))
async def add_region(page: SignedInPage) -> Response:
    form = await _admin(page).form()
    try:
        body = RegionIn(code=form.get("code", ""), name=form.get("name", ""))
        # The API's own handler: its rules (a code is unique) stay in one place.
        made = await create_region(body, page.user, page.session, page.runtime)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("region"))
        return await _regions_page(page, status, form=form, errors=errors)
    return page.redirect(
        "/app/admin/regions", page.gettext("Region %(code)s added.") % {"code": made.code}
    )


@router.get("/regions/{region_id}/delete")
async def confirm_delete_region(region_id: str, page: SignedInPage) -> Response:
    _admin(page)
    regions = await list_regions(page.user, page.session, page.runtime)
    found = next((r for r in regions if r.id == region_id), None)
    if found is None:
        page.not_found(N_("region"))
    return page.html(
        "confirm_action.html",
        title=page.gettext("Delete the region %(code)s?") % {"code": found.code},
        section="admin",
        action=f"/app/admin/regions/{region_id}/delete",
        detail=page.gettext(
            "%(name)s (%(code)s) is taken out of every monitor that checks from it."
        )
        % {"name": found.name, "code": found.code},
        confirm=page.gettext("Delete the region"),
        cancel="/app/admin/regions",
    )


@router.post("/regions/{region_id}/delete", openapi_extra=offers("deleteRegion"))
async def delete_region(region_id: str, page: SignedInPage) -> Response:
    _admin(page)
    async with page.button(N_("region"), "/app/admin/regions", N_("Region not deleted")):
        await MonitorService(page.session, page.runtime).delete_region(page.user, region_id)
    return page.redirect("/app/admin/regions", page.gettext("Region deleted."))
