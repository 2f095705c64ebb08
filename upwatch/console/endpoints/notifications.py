"""Notification providers: the list, a new provider by type, "send test", delete."""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import TypeAdapter, ValidationError

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.console.endpoints.projects import projects_of
from upwatch.kit.errors import ProblemError
from upwatch.notifications.channels import IN_FORM_ORDER, REGISTRY, Channel
from upwatch.notifications.repository import ProviderRepository
from upwatch.notifications.schemas import ProviderCreate, ProviderOut
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
        title="Notifications",
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
        title="New notification provider",
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
        status, errors = page.refused(exc, "project")
        # Secrets are never sent back into a page.
        kept = {k: v for k, v in form.items() if not _is_secret(channel, k)}
        return await _new_provider_page(page, channel, status, form=kept, errors=errors)
    return page.redirect("/app/notifications", f"{provider.name} added: send it a test.")


def _is_secret(channel: str, field: str) -> bool:
    """A field the API masks (the channel's own list: chat webhook URLs are secrets too)."""
    return REGISTRY[channel].is_secret_path(field)


@router.post("/notifications/{provider_id}/test", openapi_extra=offers("testNotificationProvider"))
async def test_provider(provider_id: str, page: SignedInPage) -> Response:
    async with page.button("notification provider", "/app/notifications", "No test sent"):
        sent = await ProviderService(page.session, page.runtime).test(page.user, provider_id)
    if sent:
        return page.redirect("/app/notifications", "Test message sent.")
    return page.redirect(
        "/app/notifications",
        "The test message could not be delivered; the error is in the alert history.",
    )


@router.post(
    "/notifications/{provider_id}/delete", openapi_extra=offers("deleteNotificationProvider")
)
async def delete_provider(provider_id: str, page: SignedInPage) -> Response:
    async with page.button("notification provider", "/app/notifications", "Not deleted"):
        await ProviderService(page.session, page.runtime).delete(page.user, provider_id)
    return page.redirect("/app/notifications", "Provider deleted.")
