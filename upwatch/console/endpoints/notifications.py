"""Notification providers: the list, a new provider by type, its edit form, "send test",
delete (after a confirmation page)."""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import TypeAdapter, ValidationError

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.console.endpoints.projects import projects_of
from upwatch.kit.errors import NotFound, ProblemError
from upwatch.kit.languages import N_
from upwatch.notifications.channels import IN_FORM_ORDER, REGISTRY, Channel
from upwatch.notifications.repository import ProviderRepository
from upwatch.notifications.schemas import ProviderCreate, ProviderOut, ProviderUpdate
from upwatch.notifications.service import ProviderService

# The channels in the order the console offers them, each with its form (``Channel.form``).
CHANNELS: Final[dict[str, Channel]] = {channel.name: channel for channel in IN_FORM_ORDER}
FIRST: Final = IN_FORM_ORDER[0].name

router = APIRouter(prefix="/app")
_NEW_PROVIDER: TypeAdapter[Any] = TypeAdapter(ProviderCreate)


def destination(provider: Any) -> str:
    """Where a provider sends, as the API shows it (secrets masked)."""
    config = ProviderOut.model_validate(provider).config
    for key in ("to", "url", "webhookUrl", "chatId"):
        if config.get(key):
            value = config[key]
            return ", ".join(value) if isinstance(value, list) else str(value)
    return "-"


@router.get("/notifications", openapi_extra=offers("listMyNotificationProviders"))
async def providers_page(page: SignedInPage) -> Response:
    providers, _total = await ProviderRepository(page.session).list_visible(page.user, 500, 0)
    names = {a.project.id: a.project.name for a in await projects_of(page)}
    return page.html(
        "notifications.html",
        title=page.gettext("Notifications"),
        section="notifications",
        providers=providers,
        project_names=names,
        channels=CHANNELS,
        destination=destination,
    )


def _channel(page: Page, form: dict[str, str] | None = None) -> str:
    chosen = (form or {}).get("type") or page.request.query_params.get("type", FIRST)
    return chosen if chosen in CHANNELS else FIRST


async def _new_provider_page(
    page: Page, channel: str, status: int = 200, **context: Any
) -> Response:
    return page.html(
        "notification_new.html",
        status,
        title=page.gettext("New notification provider"),
        section="notifications",
        channel=channel,
        channels=CHANNELS,
        projects=await projects_of(page),
        **context,
    )


@router.get("/notifications/new")
async def new_provider_page(page: SignedInPage) -> Response:
    return await _new_provider_page(page, _channel(page))


def _provider_body(channel: str, form: dict[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for field in CHANNELS[channel].form:
        value = form.get(f"config.{field.name}", "").strip()
        if not value and field.optional:
            continue
        config[field.name] = (
            [a.strip() for a in value.split(",") if a.strip()] if field.listed else value
        )
    return {
        "projectId": form.get("projectId", ""),
        "name": form.get("name", ""),
        "type": channel,
        "config": config,
    }


@router.post("/notifications/new", openapi_extra=offers("createNotificationProvider"))
async def create_provider(page: SignedInPage) -> Response:
    form = await page.form()
    channel = _channel(page, form)
    try:
        body = _NEW_PROVIDER.validate_python(_provider_body(channel, form))
        provider = await ProviderService(page.session, page.runtime).create(page.user, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
        # Secrets are never sent back into a page.
        kept = {k: v for k, v in form.items() if not _is_secret(channel, k)}
        return await _new_provider_page(page, channel, status, form=kept, errors=errors)
    return page.redirect(
        "/app/notifications",
        page.gettext("%(name)s added: send it a test.") % {"name": provider.name},
    )


def _is_secret(channel: str, field: str) -> bool:
    """A field the API masks (the channel's own list: chat webhook URLs are secrets too)."""
    return REGISTRY[channel].is_secret_path(field)


@router.post("/notifications/{provider_id}/test", openapi_extra=offers("testNotificationProvider"))
async def test_provider(provider_id: str, page: SignedInPage) -> Response:
    async with page.button(N_("notification provider"), "/app/notifications", N_("No test sent")):
        sent = await ProviderService(page.session, page.runtime).test(page.user, provider_id)
    if sent:
        return page.redirect("/app/notifications", page.gettext("Test message sent."))
    return page.redirect(
        "/app/notifications",
        page.gettext("The test message could not be delivered; the error is in the alert history."),
    )


# --- One provider: its edit form and its deletion -----------------------------------------


async def _visible_provider(page: Page, provider_id: str) -> Any:
    try:
        return await ProviderRepository(page.session).get_visible(page.user, provider_id)
    except NotFound:
        page.not_found(N_("notification provider"))


def _shown_form(provider: Any) -> dict[str, str]:
    """The provider's fields as the edit form shows them; secrets left blank (masked in the
    hint), lists comma-separated."""
    out = ProviderOut.model_validate(provider)
    form = {
        "name": out.name,
        "isEnabled": "true" if out.is_enabled else "false",
        "quietHoursStart": out.quiet_hours_start or "",
        "quietHoursEnd": out.quiet_hours_end or "",
        "repeatEveryMinutes": ""
        if out.repeat_every_minutes is None
        else str(out.repeat_every_minutes),
    }
    for field in REGISTRY[out.type].form:
        value = out.config.get(field.name)
        if _is_secret(out.type, f"config.{field.name}"):
            continue
        shown = ", ".join(value) if isinstance(value, list) else value
        form[f"config.{field.name}"] = "" if shown is None else str(shown)
    return form


async def _edit_page(page: Page, provider: Any, status: int = 200, **context: Any) -> Response:
    context.setdefault("form", _shown_form(provider))
    out = ProviderOut.model_validate(provider)
    return page.html(
        "notification_edit.html",
        status,
        title=page.gettext("Provider %(name)s") % {"name": provider.name},
        section="notifications",
        provider=out,
        channel=REGISTRY[out.type],
        is_secret=lambda name: _is_secret(out.type, f"config.{name}"),
        **context,
    )


@router.get("/notifications/{provider_id}", openapi_extra=offers("getNotificationProvider"))
async def provider_page(provider_id: str, page: SignedInPage) -> Response:
    return await _edit_page(page, await _visible_provider(page, provider_id))


def _edited_config(provider: Any, form: dict[str, str]) -> dict[str, Any]:
    """The whole config the update sends: the stored one as the API shows it (masked), each
    form field over it; a blank secret stays masked, which the service reads as "keep it"."""
    channel = REGISTRY[provider.type]
    config = dict(ProviderOut.model_validate(provider).config)
    for field in channel.form:
        value = form.get(f"config.{field.name}", "").strip()
        if not value and channel.is_secret_path(f"config.{field.name}"):
            continue
        if not value and field.optional:
            config.pop(field.name, None)
            continue
        config[field.name] = (
            [a.strip() for a in value.split(",") if a.strip()] if field.listed else value
        )
    return config


def _provider_update(provider: Any, form: dict[str, str]) -> ProviderUpdate:
    repeat = form.get("repeatEveryMinutes", "").strip()
    return ProviderUpdate.model_validate(
        {
            "name": form.get("name", ""),
            "isEnabled": form.get("isEnabled") == "true",
            "quietHoursStart": form.get("quietHoursStart") or None,
            "quietHoursEnd": form.get("quietHoursEnd") or None,
            "repeatEveryMinutes": repeat or None,
            "config": _edited_config(provider, form),
        }
    )


@router.post("/notifications/{provider_id}", openapi_extra=offers("updateNotificationProvider"))
async def update_provider(provider_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    provider = await _visible_provider(page, provider_id)
    try:
        body = _provider_update(provider, form)
        await ProviderService(page.session, page.runtime).update(page.user, provider_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("notification provider"))
        kept = {k: v for k, v in form.items() if not _is_secret(provider.type, k)}
        provider = await _visible_provider(page, provider_id)
        return await _edit_page(page, provider, status, form=kept, errors=errors)
    return page.redirect(f"/app/notifications/{provider_id}", page.gettext("Provider saved."))


@router.get("/notifications/{provider_id}/delete")
async def confirm_delete_provider(provider_id: str, page: SignedInPage) -> Response:
    provider = await _visible_provider(page, provider_id)
    return page.html(
        "confirm_action.html",
        title=page.gettext("Delete %(name)s?") % {"name": provider.name},
        section="notifications",
        action=f"/app/notifications/{provider_id}/delete",
        detail=page.gettext(
            "Monitors stop alerting through this provider, and escalation policies that "
            "name it page one provider fewer."
        ),
        confirm=page.gettext("Delete the provider"),
        cancel=f"/app/notifications/{provider_id}",
    )


@router.post(
    "/notifications/{provider_id}/delete", openapi_extra=offers("deleteNotificationProvider")
)
async def delete_provider(provider_id: str, page: SignedInPage) -> Response:
    async with page.button(N_("notification provider"), "/app/notifications", N_("Not deleted")):
        await ProviderService(page.session, page.runtime).delete(page.user, provider_id)
    return page.redirect("/app/notifications", page.gettext("Provider deleted."))
