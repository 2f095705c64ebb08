"""Status pages: the list, a new page, the editor (components, the page's message and its
history, every setting of the API's update), subscribers, deleting with confirmation, a
preview."""

from __future__ import annotations

from typing import Any, Final, get_args

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from upwatch.console.endpoints.account import LANGUAGES, zones
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.console.endpoints.projects import projects_of
from upwatch.console.render import POLICY
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_
from upwatch.models import StatusPage, StatusPageComponent, StatusPageGroup, StatusPageSubscriber
from upwatch.monitors.repository import MonitorRepository
from upwatch.notifications.channels import mask_value
from upwatch.statuspages.repository import StatusPageRepository
from upwatch.statuspages.rules import group_status
from upwatch.statuspages.schemas import (
    ComponentCreate,
    ComponentUpdate,
    GroupCreate,
    GroupUpdate,
    StatusMessageIn,
    StatusPageCreate,
    StatusPageUpdate,
    SubscriberCreate,
    SubscriberUpdate,
    Theme,
)
from upwatch.statuspages.service import StatusPageService

router = APIRouter(prefix="/app")

# The selects' options, as (value, label) pairs; the labels are translated where shown.
THEME_LABELS: Final = {"light": N_("Light"), "dark": N_("Dark")}
THEMES: Final = tuple((theme, THEME_LABELS[theme]) for theme in get_args(Theme))
VISIBILITIES: Final = (
    ("public", N_("Public: anyone")),
    ("password", N_("Password: whoever has the page's password, and the project's members")),
    ("members", N_("Members: only the project's members (others get “not found”)")),
)
HOOK_KINDS: Final = (
    ("webhook", N_("Webhook (signed JSON)")),
    ("slack", N_("Slack incoming webhook")),
)
# A component's or group's status as the editor names it (statuspages/rules.py).
STATUS_WORDS: Final = {
    "operational": N_("operational"),
    "degraded": N_("degraded"),
    "partial_outage": N_("partial outage"),
    "major_outage": N_("major outage"),
    "maintenance": N_("maintenance"),
    "unknown": N_("unknown"),
}
# A subscriber's kind, as the list of subscribers names it.
KIND_WORDS: Final = {"email": N_("E-mail"), "webhook": N_("Webhook"), "slack": N_("Slack")}
# The title of a hook's removal (an e-mail subscriber's names its address).
REMOVE_TITLES: Final = {
    "webhook": N_("Remove this webhook subscriber?"),
    "slack": N_("Remove this slack subscriber?"),
}
# The editor shows the newest messages; the API pages through all of them.
MESSAGES_SHOWN: Final = 20
SUBSCRIBERS_PER_PAGE: Final = 50


def _choices(page: Page, pairs: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """A select's options with their labels in the visitor's language."""
    return [(value, page.gettext(label)) for value, label in pairs]


async def _pages_page(page: Page, status: int = 200, **context: Any) -> Response:
    pages, _total = await StatusPageRepository(page.session).list_visible(page.user, 500, 0)
    projects = await projects_of(page)
    return page.html(
        "status_pages.html",
        status,
        title=page.gettext("Status pages"),
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
        status, errors = page.refused(exc, N_("project"))
        return await _pages_page(page, status, form=form, errors=errors)
    return page.redirect(
        f"/app/status-pages/{made.id}",
        page.gettext("Status page %(name)s created.") % {"name": made.name},
    )


async def _visible(page: Page, service: StatusPageService, page_id: str) -> StatusPage:
    try:
        return await service.pages.get_visible(page.user, page_id)
    except ProblemError:
        page.not_found(N_("status page"))


def _settings_of(status_page: StatusPage) -> dict[str, str]:
    """The settings form filled in with what the page has now."""
    return {
        "name": status_page.name,
        "slug": status_page.slug,
        "description": status_page.description,
        "visibility": status_page.visibility,
        # Never the password: an empty box keeps it.
        "allowedNetworks": "\n".join(status_page.allowed_networks),
        "theme": status_page.theme,
        "customDomain": status_page.custom_domain or "",
        "customCss": status_page.custom_css,
        "customJs": status_page.custom_js,
        "key": status_page.key or "",
        "timeZone": status_page.time_zone,
        "language": status_page.language,
        "visitorLanguage": "true" if status_page.visitor_language else "false",
    }


def _update_of(form: dict[str, str]) -> StatusPageUpdate:
    """The settings form as the API's update: every field sent, an empty domain or key
    removing it (the API's null), an empty password keeping the page's, the allowlist one
    network a line. ``visibility`` says what the seed's ``isPublic`` would (a form without
    it, posted before it existed, still sends ``isPublic``)."""
    lines = (line.strip() for line in form.get("allowedNetworks", "").splitlines())
    access: dict[str, object] = {"allowedNetworks": [line for line in lines if line]}
    if form.get("visibility"):
        access["visibility"] = form["visibility"]
    else:
        access["isPublic"] = form.get("isPublic") == "true"
    if form.get("password"):
        access["password"] = form["password"]
    return StatusPageUpdate.model_validate(
        {
            "name": form.get("name", ""),
            "slug": form.get("slug", ""),
            "description": form.get("description", ""),
            **access,
            "theme": form.get("theme", ""),
            "customDomain": form.get("customDomain") or None,
            "customCss": form.get("customCss", ""),
            "customJs": form.get("customJs", ""),
            "key": form.get("key") or None,
        }
        # A form from before a field (an open tab) keeps the page's value.
        | ({"timeZone": form["timeZone"]} if "timeZone" in form else {})
        | ({"language": form["language"]} if "language" in form else {})
        | (
            {"visitorLanguage": form["visitorLanguage"] == "true"}
            if "visitorLanguage" in form
            else {}
        )
    )


Entry = tuple[StatusPageGroup | None, list[StatusPageComponent]]
# What the editor's Up and Down buttons move.
Item = StatusPageComponent | StatusPageGroup


def _entries(groups: list[StatusPageGroup], components: list[StatusPageComponent]) -> list[Entry]:
    """The editor's rows as the page lists them (statuspages/render.layout): groups with
    their members, and ungrouped components, in one sequence by order, a group first on a
    tie."""
    members: dict[str, list[StatusPageComponent]] = {g.id: [] for g in groups}
    loose = []
    for component in components:
        if component.group_id in members:
            members[component.group_id].append(component)
        else:
            loose.append(component)
    ranked: list[tuple[int, int, int, Entry]] = [
        (g.position, 0, n, (g, members[g.id])) for n, g in enumerate(groups)
    ]
    ranked += [(c.position, 1, n, (None, [c])) for n, c in enumerate(loose)]
    return [entry for *_rank, entry in sorted(ranked, key=lambda r: r[:3])]


async def _editor(page: Page, page_id: str, status: int = 200, **context: Any) -> Response:
    service = StatusPageService(page.session, page.runtime)
    status_page = await _visible(page, service, page_id)
    components, messages, statuses = await service.shown([status_page])
    shown = components[status_page.id]
    groups = (await service.groups([status_page]))[status_page.id]
    entries = _entries(groups, shown)
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
        entries=entries,
        groups=groups,
        group_statuses={
            g.id: group_status(statuses[c.id] for c in members) for g, members in entries if g
        },
        zones=[(z, z) for z in zones()],
        languages=LANGUAGES,
        message=messages.get(status_page.id),
        history=history,
        posted=posted,
        subscribers=subscribers,
        status_words=STATUS_WORDS,
        themes=_choices(page, THEMES),
        visibilities=_choices(page, VISIBILITIES),
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
        body = ComponentCreate(
            monitorId=form.get("monitorId", ""),
            name=form.get("name") or None,
            groupId=form.get("groupId") or None,
        )
        await service.add_component(page.user, page_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("status page"))
        # The settings form has a "name" too: this one's error goes next to this one's box.
        errors = {"componentName" if k == "name" else k: v for k, v in errors.items()}
        return await _editor(page, page_id, status, form=form, errors=errors)
    return page.redirect(f"/app/status-pages/{page_id}", page.gettext("Component added."))


@router.post(
    "/status-pages/{page_id}/components/{component_id}",
    openapi_extra=offers("updateStatusPageComponent", "deleteStatusPageComponent"),
)
async def change_component(page_id: str, component_id: str, page: SignedInPage) -> Response:
    """Rename a component, move it up or down a place (among its group's members, or among
    the page's groups and ungrouped components), put it in a group or take it out, or remove
    it (the button pressed)."""
    form = await page.form()
    service = StatusPageService(page.session, page.runtime)
    action = form.get("action", "rename")
    try:
        if action == "remove":
            await service.delete_component(page.user, page_id, component_id)
            done = page.gettext("Component removed.")
        elif action in {"up", "down"}:
            done = await _move(page, service, page_id, component_id, action)
        elif action == "group":
            body = ComponentUpdate(groupId=form.get("groupId") or None)
            await service.update_component(page.user, page_id, component_id, body)
            moved = page.gettext("Component moved to its group.")
            done = moved if body.groupId else page.gettext("Component ungrouped.")
        else:
            body = ComponentUpdate(name=form.get("name", ""))
            await service.update_component(page.user, page_id, component_id, body)
            done = page.gettext("Component renamed.")
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("component"))
        errors = {f"name-{component_id}" if k == "name" else k: v for k, v in errors.items()}
        return await _editor(page, page_id, status, errors=errors)
    return page.redirect(f"/app/status-pages/{page_id}", done)


async def _move(
    page: Page, service: StatusPageService, page_id: str, item_id: str, way: str
) -> str:
    """Swap a component or group with its neighbour in the list it is in (its group's
    members, or the page's groups and ungrouped components): that list is renumbered 0, 1,
    2... first, so pages whose items share an order (set through the API) move predictably."""
    status_page = await service.pages.get_visible(page.user, page_id)
    components, _m, _s = await service.shown([status_page])
    groups = (await service.groups([status_page]))[status_page.id]
    entries = _entries(groups, components[status_page.id])
    top: list[Item] = [g or m[0] for g, m in entries]
    siblings: list[Item] = next(
        (
            list[Item](members)
            for group, members in entries
            if group and any(c.id == item_id for c in members)
        ),
        top,
    )
    order = [item.id for item in siblings]
    if item_id not in order:
        page.not_found(N_("component or group"))
    at = order.index(item_id)
    other = at - 1 if way == "up" else at + 1
    if not 0 <= other < len(order):
        return page.gettext("Already there.")
    siblings[at], siblings[other] = siblings[other], siblings[at]
    for position, moved in enumerate(siblings):
        if isinstance(moved, StatusPageGroup):
            await service.update_group(page.user, page_id, moved.id, GroupUpdate(order=position))
        else:
            body = ComponentUpdate(order=position)
            await service.update_component(page.user, page_id, moved.id, body)
    if isinstance(siblings[other], StatusPageGroup):
        return page.gettext("Group moved.")
    return page.gettext("Component moved.")


@router.post("/status-pages/{page_id}/groups", openapi_extra=offers("addStatusPageGroup"))
async def add_group(page_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    service = StatusPageService(page.session, page.runtime)
    try:
        body = GroupCreate(name=form.get("groupName", ""))
        await service.add_group(page.user, page_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("status page"))
        # Its box is "groupName": the settings form has a "name" too.
        errors = {"groupName" if k in {"name", ""} else k: v for k, v in errors.items()}
        return await _editor(page, page_id, status, form=form, errors=errors)
    return page.redirect(
        f"/app/status-pages/{page_id}", page.gettext("Group %(name)s added.") % {"name": body.name}
    )


@router.post(
    "/status-pages/{page_id}/groups/{group_id}",
    openapi_extra=offers("updateStatusPageGroup", "deleteStatusPageGroup"),
)
async def change_group(page_id: str, group_id: str, page: SignedInPage) -> Response:
    """Rename a group, move it up or down a place, or delete it (its components stay)."""
    form = await page.form()
    service = StatusPageService(page.session, page.runtime)
    action = form.get("action", "rename")
    try:
        if action == "remove":
            await service.delete_group(page.user, page_id, group_id)
            done = page.gettext("Group deleted; its components are ungrouped.")
        elif action in {"up", "down"}:
            done = await _move(page, service, page_id, group_id, action)
        else:
            body = GroupUpdate(name=form.get("name", ""))
            await service.update_group(page.user, page_id, group_id, body)
            done = page.gettext("Group renamed.")
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("group"))
        key = f"group-{group_id}"
        errors = {key if k in {"name", ""} else k: v for k, v in errors.items()}
        return await _editor(page, page_id, status, errors=errors)
    return page.redirect(f"/app/status-pages/{page_id}", done)


@router.post("/status-pages/{page_id}/message", openapi_extra=offers("postStatusPageMessage"))
async def post_message(page_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    about = [str(v) for v in (await page.request.form()).getlist("componentIds")]
    service = StatusPageService(page.session, page.runtime)
    try:
        body = StatusMessageIn(message=form.get("message", ""), componentIds=about)
        await service.post_message(page.user, page_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("status page"))
        return await _editor(page, page_id, status, form=form, about=about, errors=errors)
    done = page.gettext("Message posted.") if body.message else page.gettext("Message cleared.")
    return page.redirect(f"/app/status-pages/{page_id}", done)


@router.post("/status-pages/{page_id}/settings", openapi_extra=offers("updateStatusPage"))
async def save_settings(page_id: str, page: SignedInPage) -> Response:
    form = await page.form()
    try:
        body = _update_of(form)
        saved = await StatusPageService(page.session, page.runtime).update(page.user, page_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("status page"))
        # The allowlist is one box: a line's error ("allowedNetworks.1") goes next to it.
        errors = {k.split(".", 1)[0]: v for k, v in errors.items()}
        return await _editor(page, page_id, status, settings=form, errors=errors)
    return page.redirect(
        f"/app/status-pages/{page_id}",
        page.gettext("Settings of %(name)s saved.") % {"name": saved.name},
    )


@router.get("/status-pages/{page_id}/delete")
async def confirm_delete(page_id: str, page: SignedInPage) -> Response:
    """Asks first: deleting takes the components and the message history with it."""
    status_page = await _visible(page, StatusPageService(page.session, page.runtime), page_id)
    return page.html(
        "status_page_delete.html",
        title=page.gettext("Delete %(name)s?") % {"name": status_page.name},
        section="status-pages",
        status_page=status_page,
    )


@router.post("/status-pages/{page_id}/delete", openapi_extra=offers("deleteStatusPage"))
async def delete_status_page(page_id: str, page: SignedInPage) -> Response:
    async with page.button(N_("status page"), f"/app/status-pages/{page_id}", N_("Not deleted")):
        await StatusPageService(page.session, page.runtime).delete(page.user, page_id)
    return page.redirect("/app/status-pages", page.gettext("Status page deleted."))


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
        kind_words=KIND_WORDS,
        title=page.gettext("Subscribers of %(name)s") % {"name": status_page.name},
        section="status-pages",
        status_page=status_page,
        subscribers=subscribers,
        total=total,
        offset=offset,
        per_page=SUBSCRIBERS_PER_PAGE,
        kinds=_choices(page, HOOK_KINDS),
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
        status, errors = page.refused(exc, N_("status page"))
        return await _subscribers_page(page, page_id, status, form=form, errors=errors)
    status_page = await _visible(page, service, page_id)
    return page.html(
        "status_page_subscriber_added.html",
        title=page.gettext("Subscriber added"),
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
        page.not_found(N_("subscriber"))
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
        title=page.gettext("Change a subscriber"),
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
        status, errors = page.refused(exc, N_("subscriber"))
        return await _subscriber_form(
            page, page_id, subscriber_id, status, form=form, errors=errors
        )
    return page.redirect(
        f"/app/status-pages/{page_id}/subscribers", page.gettext("Subscriber changed.")
    )


def _removal_title(page: Page, subscriber: StatusPageSubscriber) -> str:
    if subscriber.email:
        return page.gettext("Remove %(email)s?") % {"email": subscriber.email}
    if subscriber.kind in REMOVE_TITLES:
        return page.gettext(REMOVE_TITLES[subscriber.kind])
    return page.gettext("Remove this %(kind)s subscriber?") % {"kind": subscriber.kind}


@router.get("/status-pages/{page_id}/subscribers/{subscriber_id}/remove")
async def confirm_remove_subscriber(
    page_id: str, subscriber_id: str, page: SignedInPage
) -> Response:
    status_page, subscriber = await _subscriber(page, page_id, subscriber_id)
    return page.html(
        "status_page_subscriber_remove.html",
        title=_removal_title(page, subscriber),
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
    async with page.button(N_("subscriber"), back, N_("Not removed")):
        await StatusPageService(page.session, page.runtime).delete_subscriber(
            page.user, page_id, subscriber_id
        )
    return page.redirect(back, page.gettext("Subscriber removed: no further notice goes to them."))


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
