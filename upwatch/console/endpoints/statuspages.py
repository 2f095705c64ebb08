"""Status pages: the list, a new page, the editor (components, the page's message and its
history, every setting of the API's update), subscribers, deleting with confirmation, a
preview."""

from __future__ import annotations

from typing import Any, Final, get_args

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.console.endpoints.projects import projects_of
from upwatch.console.render import POLICY
from upwatch.kit.errors import ProblemError
from upwatch.models import StatusPage, StatusPageSubscriber
from upwatch.monitors.repository import MonitorRepository
from upwatch.notifications.channels import mask_value
from upwatch.statuspages.repository import StatusPageRepository
from upwatch.statuspages.schemas import (
    ComponentCreate,
    ComponentUpdate,
    StatusMessageIn,
    StatusPageCreate,
    StatusPageUpdate,
    SubscriberCreate,
    SubscriberUpdate,
    Theme,
)
from upwatch.statuspages.service import StatusPageService

router = APIRouter(prefix="/app")

THEMES: Final = tuple((theme, theme.capitalize()) for theme in get_args(Theme))
# The editor shows the newest messages; the API pages through all of them.
MESSAGES_SHOWN: Final = 20
SUBSCRIBERS_PER_PAGE: Final = 50


async def _pages_page(page: Page, status: int = 200, **context: Any) -> Response:
    pages, _total = await StatusPageRepository(page.session).list_visible(page.user, 500, 0)
    projects = await projects_of(page)
    return page.html(
        "status_pages.html",
        status,
        title="Status pages",
        section="status-pages",
        pages=pages,
        projects=projects,
        project_names={a.project.id: a.project.name for a in projects},
        **context,
    )


@router.get("/status-pages", openapi_extra=offers("listStatusPages"))
async def status_pages(page: SignedInPage) -> Response:
    return await _pages_page(page)


@router.post("/status-pages", openapi_extra=offers("createStatusPage"))
async def create_status_page(page: SignedInPage) -> Response:
    form = await page.form()
    try:
        body = StatusPageCreate(
            projectId=form.get("projectId", ""),
            name=form.get("name", ""),
            slug=form.get("slug", ""),
            isPublic=form.get("isPublic") == "on",
        )
        made = await StatusPageService(page.session, page.runtime).create(page.user, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "project")
        return await _pages_page(page, status, form=form, errors=errors)
    return page.redirect(f"/app/status-pages/{made.id}", f"Status page {made.name} created.")


async def _visible(page: Page, service: StatusPageService, page_id: str) -> StatusPage:
    try:
        return await service.pages.get_visible(page.user, page_id)
    except ProblemError:
        page.not_found("status page")


def _settings_of(status_page: StatusPage) -> dict[str, str]:
    """The settings form filled in with what the page has now."""
    return {
        "name": status_page.name,
        "slug": status_page.slug,
        "description": status_page.description,
        "isPublic": "true" if status_page.is_public else "false",
        "theme": status_page.theme,
        "customDomain": status_page.custom_domain or "",
        "customCss": status_page.custom_css,
        "customJs": status_page.custom_js,
        "key": status_page.key or "",
    }


def _update_of(form: dict[str, str]) -> StatusPageUpdate:
    """The settings form as the API's update: every field sent, an empty domain or key
    removing it (the API's null)."""
    return StatusPageUpdate.model_validate(
        {
            "name": form.get("name", ""),
            "slug": form.get("slug", ""),
            "description": form.get("description", ""),
            "isPublic": form.get("isPublic") == "true",
            "theme": form.get("theme", ""),
            "customDomain": form.get("customDomain") or None,
            "customCss": form.get("customCss", ""),
            "customJs": form.get("customJs", ""),
            "key": form.get("key") or None,
        }
    )


async def _editor(page: Page, page_id: str, status: int = 200, **context: Any) -> Response:
    service = StatusPageService(page.session, page.runtime)
    status_page = await _visible(page, service, page_id)
    components, messages, statuses = await service.shown([status_page])
    shown = components[status_page.id]
    on_page = {c.monitor_id for c in shown}
    monitors = await MonitorRepository(page.session).visible_all(page.user, status_page.project_id)
    history, posted = await service.message_history(page.user, page_id, MESSAGES_SHOWN, 0)
    _first, subscribers = await service.subscribers(page.user, page_id, 1, 0)
    context.setdefault("settings", _settings_of(status_page))
    context.setdefault("about", [])
    return page.html(
        "status_page.html",
        status,
        title=status_page.name,
        section="status-pages",
        status_page=status_page,
        components=shown,
        component_names={c.id: c.name for c in shown},
        statuses=statuses,
        message=messages.get(status_page.id),
        history=history,
        posted=posted,
        subscribers=subscribers,
        themes=THEMES,
        addable=[m for m in monitors if m.id not in on_page],
        **context,
    )


@router.get(
    "/status-pages/{page_id}", openapi_extra=offers("getStatusPage", "listStatusPageMessages")
)
async def status_page_editor(page_id: str, page: SignedInPage) -> Response:
    return await _editor(page, page_id)


@router.post("/status-pages/{page_id}/components", openapi_extra=offers("addStatusPageComponent"))
async def add_component(page_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    service = StatusPageService(page.session, page.runtime)
    try:
        body = ComponentCreate(monitorId=form.get("monitorId", ""), name=form.get("name") or None)
        await service.add_component(page.user, page_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "status page")
        # The settings form has a "name" too: this one's error goes next to this one's box.
        errors = {"componentName" if k == "name" else k: v for k, v in errors.items()}
        return await _editor(page, page_id, status, form=form, errors=errors)
    return page.redirect(f"/app/status-pages/{page_id}", "Component added.")


@router.post(
    "/status-pages/{page_id}/components/{component_id}",
    openapi_extra=offers("updateStatusPageComponent", "deleteStatusPageComponent"),
)
async def change_component(page_id: str, component_id: str, page: SignedInPage) -> Response:
    """Rename a component, move it up or down a place, or remove it (the button pressed)."""
    form = await page.form()
    service = StatusPageService(page.session, page.runtime)
    action = form.get("action", "rename")
    try:
        if action == "remove":
            await service.delete_component(page.user, page_id, component_id)
            done = "Component removed."
        elif action in {"up", "down"}:
            done = await _move(page, service, page_id, component_id, action)
        else:
            body = ComponentUpdate(name=form.get("name", ""))
            await service.update_component(page.user, page_id, component_id, body)
            done = "Component renamed."
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "component")
        errors = {f"name-{component_id}" if k == "name" else k: v for k, v in errors.items()}
        return await _editor(page, page_id, status, errors=errors)
    return page.redirect(f"/app/status-pages/{page_id}", done)


async def _move(
    page: Page, service: StatusPageService, page_id: str, component_id: str, way: str
) -> str:
    """Swap a component with its neighbour: the positions are renumbered 0, 1, 2... first, so
    pages whose components share a position (set through the API) move predictably."""
    status_page = await service.pages.get_visible(page.user, page_id)
    components, _m, _s = await service.shown([status_page])
    order = [c.id for c in components[status_page.id]]
    if component_id not in order:
        page.not_found("component")
    at = order.index(component_id)
    other = at - 1 if way == "up" else at + 1
    if not 0 <= other < len(order):
        return "Already there."
    order[at], order[other] = order[other], order[at]
    for position, moved in enumerate(order):
        await service.update_component(page.user, page_id, moved, ComponentUpdate(order=position))
    return "Component moved."


@router.post("/status-pages/{page_id}/message", openapi_extra=offers("postStatusPageMessage"))
async def post_message(page_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    about = [str(v) for v in (await page.request.form()).getlist("componentIds")]
    service = StatusPageService(page.session, page.runtime)
    try:
        body = StatusMessageIn(message=form.get("message", ""), componentIds=about)
        await service.post_message(page.user, page_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "status page")
        return await _editor(page, page_id, status, form=form, about=about, errors=errors)
    done = "Message posted." if body.message else "Message cleared."
    return page.redirect(f"/app/status-pages/{page_id}", done)


@router.post("/status-pages/{page_id}/settings", openapi_extra=offers("updateStatusPage"))
async def save_settings(page_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    try:
        body = _update_of(form)
        saved = await StatusPageService(page.session, page.runtime).update(page.user, page_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "status page")
        return await _editor(page, page_id, status, settings=form, errors=errors)
    return page.redirect(f"/app/status-pages/{page_id}", f"Settings of {saved.name} saved.")


@router.get("/status-pages/{page_id}/delete")
async def confirm_delete(page_id: str, page: SignedInPage) -> Response:
    """Asks first: deleting takes the components and the message history with it."""
    status_page = await _visible(page, StatusPageService(page.session, page.runtime), page_id)
    return page.html(
        "status_page_delete.html",
        title=f"Delete {status_page.name}?",
        section="status-pages",
        status_page=status_page,
    )


@router.post("/status-pages/{page_id}/delete", openapi_extra=offers("deleteStatusPage"))
async def delete_status_page(page_id: str, page: SignedInPage) -> Response:
    async with page.button("status page", f"/app/status-pages/{page_id}", "Not deleted"):
        await StatusPageService(page.session, page.runtime).delete(page.user, page_id)
    return page.redirect("/app/status-pages", "Status page deleted.")


def _offset(page: Page) -> int:
    given = page.request.query_params.get("offset", "")
    return int(given) if given.isdigit() else 0


@router.get(
    "/status-pages/{page_id}/subscribers", openapi_extra=offers("listStatusPageSubscribers")
)
async def subscribers_page(page_id: str, page: SignedInPage) -> Response:
    return await _subscribers_page(page, page_id)


async def _subscribers_page(
    page: Page, page_id: str, status: int = 200, **context: Any
) -> Response:
    service = StatusPageService(page.session, page.runtime)
    status_page = await _visible(page, service, page_id)
    offset = _offset(page)
    subscribers, total = await service.subscribers(page.user, page_id, SUBSCRIBERS_PER_PAGE, offset)
    components = (await service.pages.components([status_page.id]))[status_page.id]
    return page.html(
        "status_page_subscribers.html",
        status,
        components=components,
        component_names={c.id: c.name for c in components},
        # A Slack URL is a credential: scheme and host only, as the API shows it.
        masked=mask_value,
        title=f"Subscribers of {status_page.name}",
        section="status-pages",
        status_page=status_page,
        subscribers=subscribers,
        total=total,
        offset=offset,
        per_page=SUBSCRIBERS_PER_PAGE,
        kinds=(("webhook", "Webhook (signed JSON)"), ("slack", "Slack incoming webhook")),
        **context,
    )


@router.post("/status-pages/{page_id}/subscribers", openapi_extra=offers("addStatusPageSubscriber"))
async def add_subscriber(page_id: str, page: SignedInPage) -> Response:
    """A webhook or Slack subscriber; the answer shows a webhook's signing secret, once."""
    form = await page.form()
    chosen = [str(v) for v in (await page.request.form()).getlist("componentIds")]
    service = StatusPageService(page.session, page.runtime)
    try:
        body = SubscriberCreate(
            kind=form.get("kind", ""),
            url=form.get("url", ""),
            componentIds=chosen or None,
        )
        subscriber, secret = await service.add_subscriber(page.user, page_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "status page")
        return await _subscribers_page(page, page_id, status, form=form, errors=errors)
    status_page = await _visible(page, service, page_id)
    return page.html(
        "status_page_subscriber_added.html",
        title="Subscriber added",
        section="status-pages",
        status_page=status_page,
        subscriber=subscriber,
        secret=secret,
    )


async def _subscriber(
    page: Page, page_id: str, subscriber_id: str
) -> tuple[StatusPage, StatusPageSubscriber]:
    service = StatusPageService(page.session, page.runtime)
    status_page = await _visible(page, service, page_id)
    subscriber = await service.pages.subscriber(status_page.id, subscriber_id)
    if subscriber is None:
        page.not_found("subscriber")
    return status_page, subscriber


async def _subscriber_form(
    page: Page, page_id: str, subscriber_id: str, status: int = 200, **context: Any
) -> Response:
    status_page, subscriber = await _subscriber(page, page_id, subscriber_id)
    service = StatusPageService(page.session, page.runtime)
    components = (await service.pages.components([status_page.id]))[status_page.id]
    return page.html(
        "status_page_subscriber_edit.html",
        status,
        title="Change a subscriber",
        section="status-pages",
        status_page=status_page,
        subscriber=subscriber,
        components=components,
        masked_url=mask_value(subscriber.url) if subscriber.url else "",
        **context,
    )


@router.get("/status-pages/{page_id}/subscribers/{subscriber_id}")
async def subscriber_form(page_id: str, subscriber_id: str, page: SignedInPage) -> Response:
    return await _subscriber_form(page, page_id, subscriber_id)


@router.post(
    "/status-pages/{page_id}/subscribers/{subscriber_id}",
    openapi_extra=offers("updateStatusPageSubscriber"),
)
async def change_subscriber(page_id: str, subscriber_id: str, page: SignedInPage) -> Response:
    """The components a subscriber follows, and a hook's URL (left masked: kept)."""
    form = await page.form()
    chosen = [str(v) for v in (await page.request.form()).getlist("componentIds")]
    fields: dict[str, Any] = {"componentIds": chosen or None}
    if form.get("url"):
        fields["url"] = form["url"]
    try:
        await StatusPageService(page.session, page.runtime).update_subscriber(
            page.user, page_id, subscriber_id, SubscriberUpdate(**fields)
        )
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "subscriber")
        return await _subscriber_form(
            page, page_id, subscriber_id, status, form=form, errors=errors
        )
    return page.redirect(f"/app/status-pages/{page_id}/subscribers", "Subscriber changed.")


@router.get("/status-pages/{page_id}/subscribers/{subscriber_id}/remove")
async def confirm_remove_subscriber(
    page_id: str, subscriber_id: str, page: SignedInPage
) -> Response:
    status_page, subscriber = await _subscriber(page, page_id, subscriber_id)
    return page.html(
        "status_page_subscriber_remove.html",
        title=f"Remove {subscriber.email or f'this {subscriber.kind} subscriber'}?",
        section="status-pages",
        status_page=status_page,
        subscriber=subscriber,
    )


@router.post(
    "/status-pages/{page_id}/subscribers/{subscriber_id}/remove",
    openapi_extra=offers("deleteStatusPageSubscriber"),
)
async def remove_subscriber(page_id: str, subscriber_id: str, page: SignedInPage) -> Response:
    back = f"/app/status-pages/{page_id}/subscribers"
    async with page.button("subscriber", back, "Not removed"):
        await StatusPageService(page.session, page.runtime).delete_subscriber(
            page.user, page_id, subscriber_id
        )
    return page.redirect(back, "Subscriber removed: no further notice goes to them.")


@router.get("/status-pages/{page_id}/preview")
async def preview(page_id: str, page: SignedInPage) -> Response:
    """The page as visitors will see it, private ones too; without the owner's own CSS and
    script, which the console's policy does not run."""
    status_page = await _visible(page, StatusPageService(page.session, page.runtime), page_id)
    body = await page.runtime.status_pages.preview(page.session, status_page)
    headers = {
        "Content-Security-Policy": POLICY,
        "Cache-Control": "no-store",
        "X-Robots-Tag": "noindex",
    }
    return HTMLResponse(body, headers=headers)
