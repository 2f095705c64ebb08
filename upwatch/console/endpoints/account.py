"""The visitor's own account: plan and usage (upgrade, downgrade), name and time zone."""

from __future__ import annotations

import zoneinfo
from functools import lru_cache
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import ValidationError

from upwatch.accounts.schemas import UpdateProfileRequest, UserSettingsFields
from upwatch.accounts.service import AccountService
from upwatch.billing.service import SubscriptionService
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.kit.errors import ProblemError

router = APIRouter(prefix="/app")


async def _plan_page(page: Page) -> Response:
    subscription = await SubscriptionService(page.session, page.runtime).status(page.user)
    usage = subscription.usage
    rows = [
        ("Monitors", usage.monitors),
        ("Status pages", usage.statusPages),
        ("Projects", usage.projects),
        ("Team members", usage.teamMembers),
        ("API calls today", usage.apiCalls),
        ("Storage (MB)", usage.storage),
    ]
    catalog = page.runtime.catalog
    return page.html(
        "plan.html",
        title="Plan and usage",
        section="plan",
        subscription=subscription,
        usage=rows,
        can_upgrade=bool(catalog.upgrades) and subscription.currentPlan != catalog.upgrade_plan,
        can_downgrade=subscription.currentPlan != catalog.default_plan,
    )


@router.get("/plan", openapi_extra=offers("currentSubscription"))
async def plan_page(page: SignedInPage) -> Response:
    return await _plan_page(page)


@router.post("/plan/{change}", openapi_extra=offers("upgradeSubscription", "downgradeSubscription"))
async def change_plan(change: str, page: SignedInPage) -> Response:
    await page.form()
    service = SubscriptionService(page.session, page.runtime)
    try:
        if change == "upgrade":
            done = await service.upgrade(page.user)
        elif change == "downgrade":
            done = await service.downgrade(page.user)
        else:
            page.not_found("plan change")
    except ProblemError as exc:
        page.refused(exc, "plan")
        return page.redirect("/app/plan", f"Plan not changed: {exc.detail}")
    return page.redirect("/app/plan", f"You are on the {done.currentPlan} plan now.")


@lru_cache(maxsize=1)
def zones() -> list[str]:
    return sorted(zoneinfo.available_timezones())


async def _settings_page(page: Page, status: int = 200, **context: Any) -> Response:
    return page.html(
        "settings.html", status, title="Settings", section="settings", zones=zones(), **context
    )


@router.get("/settings", openapi_extra=offers("getProfile", "getSettings"))
async def settings_page(page: SignedInPage) -> Response:
    return await _settings_page(page)


@router.post("/settings", openapi_extra=offers("updateProfile", "updateSettings"))
async def save_settings(page: SignedInPage) -> Response:
    form = await page.form()
    accounts = AccountService(page.session, page.runtime)
    try:
        names = UpdateProfileRequest(
            firstName=form.get("firstName", ""), lastName=form.get("lastName", "")
        )
        chosen = UserSettingsFields(timezone=form.get("timezone") or "UTC")
        await accounts.update_profile(page.user, names)
        await accounts.update_settings(page.user, chosen.model_dump(exclude_unset=True))
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "account")
        return await _settings_page(page, status, form=form, errors=errors)
    return page.redirect("/app/settings", "Settings saved.")
