"""The visitor's own account: plan and usage (upgrade, downgrade); their settings (name, time
zone, language, theme, personal notification channels) and deleting the account."""

from __future__ import annotations

import re
import zoneinfo
from functools import lru_cache
from typing import Any, Final, get_args

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import ValidationError

from upwatch.accounts.preferences import settings_view
from upwatch.accounts.schemas import Theme, UpdateProfileRequest, UpdateSettingsRequest
from upwatch.accounts.service import AccountService
from upwatch.billing.service import SubscriptionService
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import SESSION_COOKIE, Page, SignedInPage
from upwatch.console.words import PLAN_NAMES, SUBSCRIPTION_STATES
from upwatch.kit import languages
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_, Language
from upwatch.kit.plans import UNLIMITED
from upwatch.notifications import personal
from upwatch.notifications.channels import REGISTRY, Channel
from upwatch.statuspages.render import Words

router = APIRouter(prefix="/app")


def _plan_name(page: Page, plan: str) -> str:
    return page.gettext(PLAN_NAMES[plan]) if plan in PLAN_NAMES else plan


def _count(words: Words, value: float) -> str:
    """A limit or amount in words: the plan catalog's UNLIMITED sentinel reads "unlimited"."""
    if value >= UNLIMITED:
        return words.gettext("unlimited")
    return languages.number(value, words.language, 0 if value == int(value) else 1)


def _frequency(words: Words, minutes: int) -> str:
    # 0 minutes is a plan without a floor: any interval a monitor accepts.
    if minutes <= 0:
        return words.gettext("any interval")
    if minutes < 60 or minutes % 60:
        return words.gettext("every %(minutes)d min") % {"minutes": minutes}
    return words.gettext("every %(hours)d h") % {"hours": minutes // 60}


def _retention(words: Words, days: int) -> str:
    if days >= UNLIMITED:
        return words.gettext("unlimited")
    return words.ngettext("%(count)s day", "%(count)s days", days) % {
        "count": languages.number(days, words.language)
    }


async def _plan_page(page: Page) -> Response:
    subscription = await SubscriptionService(page.session, page.runtime).status(page.user)
    usage = subscription.usage
    rows = [
        (N_("Monitors"), usage.monitors),
        (N_("Status pages"), usage.statusPages),
        (N_("Projects"), usage.projects),
        (N_("Team members"), usage.teamMembers),
        (N_("API calls today"), usage.apiCalls),
        (N_("Storage (MB)"), usage.storage),
    ]
    catalog = page.runtime.catalog
    state = subscription.status
    return page.html(
        "plan.html",
        title=page.gettext("Plan and usage"),
        section="plan",
        subscription=subscription,
        plan=_plan_name(page, subscription.currentPlan),
        state=page.gettext(SUBSCRIPTION_STATES.get(state, state)),
        usage=[
            (
                page.gettext(label),
                _count(page.words, item.current),
                _count(page.words, item.limit),
                item,
                item.limit < UNLIMITED,
            )
            for label, item in rows
        ],
        frequency=_frequency(page.words, subscription.limits.checkFrequencyMinutes),
        retention=_retention(page.words, subscription.limits.retentionDays),
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
            page.not_found(N_("plan change"))
    except ProblemError as exc:
        page.refused(exc, N_("plan"))
        return page.redirect(
            "/app/plan", page.gettext("Plan not changed: %(why)s") % {"why": exc.detail}
        )
    return page.redirect(
        "/app/plan",
        page.gettext("You are on the %(plan)s plan now.")
        % {"plan": _plan_name(page, done.currentPlan)},
    )


@lru_cache(maxsize=1)
def zones() -> list[str]:
    return sorted(zoneinfo.available_timezones())


# The personal channels the settings view shows, each with its provider form's fields.
PERSONAL: Final = tuple(REGISTRY[name] for name in personal.SETTINGS_CHANNELS)
LANGUAGE_NAMES: Final = languages.NAMES
# (value, label) pairs of the API's own choices.
LANGUAGES: Final = [(code, LANGUAGE_NAMES.get(code, code)) for code in get_args(Language)]
# The themes' names (translated where shown); a theme the table lacks shows its value.
THEME_NAMES: Final = {"light": N_("Light"), "dark": N_("Dark")}
THEMES: Final = [(theme, THEME_NAMES.get(theme, theme.capitalize())) for theme in get_args(Theme)]


def _settings_shown(page: Page) -> dict[str, str]:
    """The settings as the form shows them (the API's view: secrets masked, left blank)."""
    view = settings_view(page.user.settings, page.user.email).model_dump()
    form = {name: str(view[name]) for name in ("timezone", "language", "theme")}
    form["preferredNotification"] = str(view["preferredNotification"])
    for channel in PERSONAL:
        form[f"notifications.{channel.name}"] = str(view["notifications"][channel.name]).lower()
        config = view[personal.config_key(channel.name)]
        for asked in channel.form:
            value = config.get(asked.name)
            if value is None or channel.is_secret_path(f"config.{asked.name}"):
                continue
            form[_config_field(channel, asked.name)] = (
                ", ".join(value) if isinstance(value, list) else str(value)
            )
    return form


# The settings view's reasons a personal channel is not active (``personal.inactive_reasons``):
# its switch is off, or its config unset; any other reason is the config's own error, as the
# API words it.
_SWITCH_OFF: Final = re.compile(r"(notifications\.\w+) is off")
_NOT_SET: Final = re.compile(r"(\w+Config) is not set")


def _why_inactive(page: Page, reason: str | None) -> str:
    """Why a personal channel is not active, in the visitor's language."""
    said = ""
    for part in (reason or "").split("; "):
        if off := _SWITCH_OFF.fullmatch(part):
            part = page.gettext("%(switch)s is off") % {"switch": off[1]}
        elif unset := _NOT_SET.fullmatch(part):
            part = page.gettext("%(config)s is not set") % {"config": unset[1]}
        # One reason after another, as the language lists them.
        said = (
            page.gettext("%(reasons)s; %(reason)s") % {"reasons": said, "reason": part}
            if said
            else part
        )
    return said


def _config_field(channel: Channel, name: str) -> str:
    """A personal config field's form name: the API's own path (``slackConfig.webhookUrl``),
    so its errors land next to the field."""
    return f"{personal.config_key(channel.name)}.{name}"


async def _settings_page(page: Page, status: int = 200, **context: Any) -> Response:
    posted = context.pop("form", {})
    shown = settings_view(page.user.settings, page.user.email).model_dump()
    return page.html(
        "settings.html",
        status,
        title=page.gettext("Settings"),
        section="settings",
        zones=zones(),
        languages=LANGUAGES,
        themes=[(theme, page.gettext(label)) for theme, label in THEMES],
        channels=PERSONAL,
        preferred=[(c.name, page.gettext(c.title)) for c in PERSONAL],
        view=shown,
        inactive={
            name: _why_inactive(page, state["reason"])
            for name, state in shown["channelStatus"].items()
            if state["reason"]
        },
        config_field=_config_field,
        form={**_settings_shown(page), **posted},
        **context,
    )


@router.get("/settings", openapi_extra=offers("getProfile", "getSettings"))
async def settings_page(page: SignedInPage) -> Response:
    return await _settings_page(page)


def _personal_config(channel: Channel, form: dict[str, str], shown: dict[str, Any]) -> Any:
    """A channel's config from its fields: a blank secret is sent back masked as read, which
    keeps the stored one; ``{}`` (unset) when "forget" is ticked or nothing is given or kept."""
    if form.get(f"{personal.config_key(channel.name)}.forget") == "true":
        return {}
    config: dict[str, Any] = {}
    given = False
    for asked in channel.form:
        value = form.get(_config_field(channel, asked.name), "").strip()
        if not value and channel.is_secret_path(f"config.{asked.name}"):
            if isinstance(shown.get(asked.name), str):
                config[asked.name] = shown[asked.name]
                given = True
            continue
        given = given or bool(value)
        if value or not asked.optional:
            config[asked.name] = (
                [a.strip() for a in value.split(",") if a.strip()] if asked.listed else value
            )
    return config if given else {}


def _settings_body(page: Page, form: dict[str, str]) -> UpdateSettingsRequest:
    """The settings request of the form; a field the form did not send stays as it is."""
    view = settings_view(page.user.settings, page.user.email).model_dump()
    body: dict[str, Any] = {
        "timezone": form.get("timezone") or "UTC",
        "language": form.get("language") or None,
        "theme": form.get("theme") or None,
        "preferredNotification": form.get("preferredNotification") or None,
        "notifications": {
            c.name: form[f"notifications.{c.name}"] == "true"
            for c in PERSONAL
            if f"notifications.{c.name}" in form
        },
    }
    for channel in PERSONAL:
        key = personal.config_key(channel.name)
        if any(name.startswith(f"{key}.") for name in form):
            body[key] = _personal_config(channel, form, view[key])
    return UpdateSettingsRequest.model_validate(body)


@router.post("/settings", openapi_extra=offers("updateProfile", "updateSettings"))
async def save_settings(page: SignedInPage) -> Response:
    form = await page.form()
    accounts = AccountService(page.session, page.runtime)
    try:
        names = UpdateProfileRequest(
            firstName=form.get("firstName", ""), lastName=form.get("lastName", "")
        )
        chosen = _settings_body(page, form)
        await accounts.update_profile(page.user, names)
        await accounts.update_settings(page.user, chosen.fields())
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("account"))
        kept = {k: v for k, v in form.items() if not _is_secret_field(k)}
        return await _settings_page(page, status, form=kept, errors=errors)
    return page.redirect("/app/settings", page.gettext("Settings saved."))


def _is_secret_field(name: str) -> bool:
    """A posted personal secret: never sent back into a page."""
    return any(name == _config_field(c, f) for c in PERSONAL for f in c.secret_fields)


@router.get("/settings/delete")
async def confirm_delete_account(page: SignedInPage) -> Response:
    return page.html(
        "confirm_action.html",
        title=page.gettext("Delete your account?"),
        section="settings",
        action="/app/settings/delete",
        detail=page.gettext(
            "The account %(address)s is deleted with every project it owns, their monitors, "
            "incidents, status pages and API keys; you are signed out everywhere. "
            "This cannot be undone."
        )
        % {"address": page.user.email},
        confirm=page.gettext("Delete my account"),
        cancel="/app/settings",
    )


@router.post("/settings/delete", openapi_extra=offers("deleteAccount"))
async def delete_account(page: SignedInPage) -> Response:
    async with page.button(N_("account"), "/app/settings", N_("Account not deleted")):
        await AccountService(page.session, page.runtime).delete_account(page.user)
    response = page.redirect("/app/login", page.gettext("Your account is deleted."))
    response.delete_cookie(SESSION_COOKIE, path="/app")
    return response
