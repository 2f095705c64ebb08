"""Making and changing monitors: the form (new, clone, edit), pause and resume, delete, and
the same actions on several monitors at once from the list.

The form's boxes come from the API's fields (``console/monitor_form.py``); what it posts is
checked by the API's own request models and done by ``MonitorService``.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import TypeAdapter, ValidationError

from upwatch.callers.plans import plan_of
from upwatch.console import monitor_form
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.console.endpoints.projects import projects_of
from upwatch.console.monitor_form import Box, FormError
from upwatch.escalation.repository import EscalationRepository
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_
from upwatch.models import Monitor
from upwatch.monitors import secrets
from upwatch.monitors.repository import MonitorRepository, RegionRepository
from upwatch.monitors.schemas import MonitorCreate, MonitorUpdate
from upwatch.monitors.service import MonitorService, default_interval
from upwatch.probes.registry import KINDS

router = APIRouter(prefix="/app")
_NEW_MONITOR: TypeAdapter[Any] = TypeAdapter(MonitorCreate)
COMMON_BOXES: Final = monitor_form.common_boxes(MonitorUpdate)
TYPE_CHOICES: Final = [(kind.name, kind.label) for kind in KINDS.values()]
# The boxes whose values are several ticked choices.
CHOSEN: Final = ("regionIds", "dependsOn")
# How many monitors one bulk action takes (a list page shows them all; this bounds a post).
BULK_MOST: Final = 500


def _boxes(kind_name: str) -> list[Box]:
    return [*monitor_form.type_boxes(KINDS[kind_name]), *COMMON_BOXES]


async def _choices(page: Page, exclude: str | None = None) -> dict[str, list[tuple[str, ...]]]:
    regions = await RegionRepository(page.session).all()
    monitors = await MonitorRepository(page.session).visible_all(page.user)
    policies = await EscalationRepository(page.session).list_visible(page.user, 200, 0)
    return {
        # (id, name, code): the built-in region's name is ours (translated), the others' an
        # administrator's.
        "regionIds": [
            (r.id, page.gettext(r.name) if r.builtin else r.name, r.code) for r in regions
        ],
        "dependsOn": [(m.id, m.name) for m in monitors if m.id != exclude],
        "escalationPolicyId": [(p.id, p.name) for p in policies.rows],
    }


async def _form_page(
    page: Page,
    kind_name: str,
    values: dict[str, Any],
    *,
    monitor: Monitor | None = None,
    status: int = 200,
    errors: dict[str, str] | None = None,
    title: str | None = None,
) -> Response:
    plan = await plan_of(page.session, page.runtime.catalog, page.user.id)
    boxes = _boxes(kind_name)
    return page.html(
        "monitor_form.html",
        status,
        title=title or page.gettext("New monitor"),
        section="monitors",
        projects=await projects_of(page),
        types=TYPE_CHOICES,
        kind=KINDS[kind_name],
        boxes=boxes,
        choices=await _choices(page, monitor.id if monitor else None),
        values=values,
        monitor=monitor,
        default_interval=default_interval(plan),
        errors=_by_box(errors or {}, {b.name for b in boxes}),
    )


def _by_box(errors: dict[str, str], names: set[str]) -> dict[str, str]:
    """Errors about a part of a field (``headers.Authorization``, ``assertions.0.operator``)
    shown at its box, naming the part; any other at the top of the form."""
    shown: dict[str, str] = {}
    for key, message in errors.items():
        top, _, part = key.partition(".")
        if key in names or key in ("name", "projectId", *CHOSEN, "escalationPolicyId", ""):
            shown[key] = message
        elif top in names:
            shown[top] = f"{part}: {message}"
        else:
            shown[""] = f"{key}: {message}"
    return shown


def _values_of(monitor: Monitor, boxes: list[Box]) -> dict[str, Any]:
    """A stored monitor as the form shows it (secret header values stay masked)."""
    shown = monitor_form.stored_fields(monitor)
    values: dict[str, Any] = {
        box.name: monitor_form.shown(box, shown.get(box.name)) for box in boxes
    }
    values.update(
        name=monitor.name,
        projectId=monitor.project_id,
        regionIds=list(monitor.region_ids or []),
        dependsOn=list(monitor.depends_on or []),
        escalationPolicyId=monitor.escalation_policy_id or "",
    )
    return values


def _kind_asked(page: Page, default: str = "http") -> str:
    asked = page.request.query_params.get("type", default)
    return asked if asked in KINDS else default


@router.get("/monitors/new")
async def new_monitor_page(page: SignedInPage) -> Response:
    return await _form_page(page, _kind_asked(page), {})


async def _chosen(page: Page) -> dict[str, list[str]]:
    raw = await page.request.form()
    return {name: [str(v) for v in raw.getlist(name) if v] for name in CHOSEN}


async def _sent(page: Page) -> dict[str, Any]:
    """The form as sent (to show it again), once it is known to come from this session."""
    return {**await page.form(), **await _chosen(page)}


async def _posted(page: Page, kind_name: str, editing: bool) -> dict[str, Any]:
    """The request body read from the form."""
    form = await page.form()
    body = monitor_form.body_of(_boxes(kind_name), form, await _chosen(page), editing)
    body["name"] = form.get("name", "")
    policy = form.get("escalationPolicyId", "")
    if policy or editing:
        body["escalationPolicyId"] = policy or None
    return body


@router.post("/monitors/new", openapi_extra=offers("createMonitor"))
async def create_monitor(page: SignedInPage) -> Response:
    kind = await _posted_type(page)
    values = await _sent(page)
    try:
        body = await _posted(page, kind, editing=False)
        body.update(projectId=values.get("projectId", ""), type=kind)
        created = _NEW_MONITOR.validate_python(body)
        monitor = await MonitorService(page.session, page.runtime).create(page.user, created)
    except FormError as exc:
        errors = {exc.name: exc.said(page.gettext)}
        return await _form_page(page, kind, values, status=422, errors=errors)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
        return await _form_page(page, kind, values, status=status, errors=errors)
    said = page.gettext("Monitor %(name)s created.") % {"name": monitor.name}
    return page.redirect(f"/app/monitors/{monitor.id}", said)


async def _posted_type(page: Page) -> str:
    form = await page.form()
    kind = form.get("type", "http")
    return kind if kind in KINDS else "http"


async def _visible(page: Page, monitor_id: str) -> Monitor:
    try:
        return await MonitorRepository(page.session).get_visible(page.user, monitor_id)
    except ProblemError:
        page.not_found(N_("monitor"))


@router.get("/monitors/{monitor_id}/clone")
async def clone_monitor_page(monitor_id: str, page: SignedInPage) -> Response:
    """The new-monitor form filled in from a monitor; its secret header values are not
    carried (they would be the masks), so the form asks for them again."""
    monitor = await _visible(page, monitor_id)
    values = _values_of(monitor, _boxes(monitor.type))
    values["name"] = (page.gettext("Copy of %(name)s") % {"name": monitor.name})[:100]
    secret = secrets.secret_names(monitor.secret_headers or [])
    if secret and values.get("headers"):
        lines = str(values["headers"]).splitlines()
        kept = [ln for ln in lines if ln.partition(":")[0].strip().lower() not in secret]
        values["headers"] = "\n".join(kept)
    title = page.gettext("Copy %(name)s") % {"name": monitor.name}
    return await _form_page(page, monitor.type, values, title=title)


@router.get("/monitors/{monitor_id}/edit", openapi_extra=offers("getMonitor"))
async def edit_monitor_page(monitor_id: str, page: SignedInPage) -> Response:
    monitor = await _visible(page, monitor_id)
    values = _values_of(monitor, _boxes(monitor.type))
    title = page.gettext("Edit %(name)s") % {"name": monitor.name}
    return await _form_page(page, monitor.type, values, monitor=monitor, title=title)


@router.post("/monitors/{monitor_id}/edit", openapi_extra=offers("updateMonitor"))
async def edit_monitor(monitor_id: str, page: SignedInPage) -> Response:
    monitor = await _visible(page, monitor_id)
    values = await _sent(page)
    title = page.gettext("Edit %(name)s") % {"name": monitor.name}
    try:
        body = await _posted(page, monitor.type, editing=True)
        update = MonitorUpdate.model_validate(body)
        await MonitorService(page.session, page.runtime).update(page.user, monitor_id, update)
    except FormError as exc:
        errors = {exc.name: exc.said(page.gettext)}
        return await _form_page(
            page, monitor.type, values, monitor=monitor, status=422, errors=errors, title=title
        )
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("monitor"))
        monitor = await _visible(page, monitor_id)
        return await _form_page(
            page, monitor.type, values, monitor=monitor, status=status, errors=errors, title=title
        )
    said = page.gettext("Monitor %(name)s saved.") % {"name": body["name"]}
    return page.redirect(f"/app/monitors/{monitor_id}", said)


async def _set_active(page: Page, monitor_id: str, active: bool) -> Response:
    back = f"/app/monitors/{monitor_id}"
    failed = N_("Not resumed") if active else N_("Not paused")
    async with page.button(N_("monitor"), back, failed):
        service = MonitorService(page.session, page.runtime)
        await service.update(page.user, monitor_id, MonitorUpdate(isActive=active))
    return page.redirect(
        back, page.gettext("Monitor resumed.") if active else page.gettext("Monitor paused.")
    )


@router.post("/monitors/{monitor_id}/pause", openapi_extra=offers("updateMonitor"))
async def pause_monitor(monitor_id: str, page: SignedInPage) -> Response:
    return await _set_active(page, monitor_id, False)


@router.post("/monitors/{monitor_id}/resume", openapi_extra=offers("updateMonitor"))
async def resume_monitor(monitor_id: str, page: SignedInPage) -> Response:
    return await _set_active(page, monitor_id, True)


@router.get("/monitors/{monitor_id}/delete")
async def confirm_delete_monitor(monitor_id: str, page: SignedInPage) -> Response:
    monitor = await _visible(page, monitor_id)
    return page.html(
        "confirm_action.html",
        title=page.gettext("Delete %(name)s?") % {"name": monitor.name},
        section="monitors",
        action=f"/app/monitors/{monitor_id}/delete",
        detail=page.gettext(
            "Its checks, statistics and incidents' link to it go with it; monitors that "
            "depend on it no longer do. This cannot be undone."
        ),
        confirm=page.gettext("Delete the monitor"),
        cancel=f"/app/monitors/{monitor_id}",
    )


@router.post("/monitors/{monitor_id}/delete", openapi_extra=offers("deleteMonitor"))
async def delete_monitor(monitor_id: str, page: SignedInPage) -> Response:
    async with page.button(N_("monitor"), f"/app/monitors/{monitor_id}", N_("Not deleted")):
        await MonitorService(page.session, page.runtime).delete(page.user, monitor_id)
    return page.redirect("/app/monitors", page.gettext("Monitor deleted."))


# ---- several at once, from the list ----------------------------------------------------


@router.post("/monitors/bulk", openapi_extra=offers("updateMonitor", "deleteMonitor"))
async def bulk_action(page: SignedInPage) -> Response:
    """Pause, resume or delete the ticked monitors, one by one through the service: each
    refusal is named, the rest are done. Delete asks first (the page posts back with
    ``confirmed``)."""
    form = await page.form()
    raw = await page.request.form()
    ids = list(dict.fromkeys(str(v) for v in raw.getlist("ids") if v))[:BULK_MOST]
    action = form.get("action", "")
    if not ids or action not in ("pause", "resume", "delete"):
        return page.redirect(
            "/app/monitors", page.gettext("Tick the monitors to act on, then an action.")
        )
    repository = MonitorRepository(page.session)
    monitors = [m for m in await repository.visible_all(page.user) if m.id in set(ids)]
    if action == "delete" and form.get("confirmed") != "yes":
        return page.html(
            "monitors_delete.html",
            title=page.words.ngettext(
                "Delete %(num)d monitor?", "Delete %(num)d monitors?", len(monitors)
            )
            % {"num": len(monitors)},
            section="monitors",
            monitors=monitors,
        )
    service = MonitorService(page.session, page.runtime)
    done, refused = 0, []
    for monitor in monitors:
        try:
            # Each refusal comes before the service changes anything of that monitor.
            if action == "delete":
                await service.delete(page.user, monitor.id)
            else:
                update = MonitorUpdate(isActive=action == "resume")
                await service.update(page.user, monitor.id, update)
            done += 1
        except ProblemError as exc:
            refused.append(f"{monitor.name} ({exc.detail or exc.title})")
    told = _bulk_done(page, action, done)
    if refused:
        told = page.gettext("%(done)s Not done: %(refused)s.") % {
            "done": told,
            "refused": "; ".join(refused),
        }
    return page.redirect("/app/monitors", told)


def _bulk_done(page: Page, action: str, done: int) -> str:
    """What a bulk action did, as the list page's message says it."""
    ngettext = page.words.ngettext
    if action == "pause":
        said = ngettext("%(num)d monitor paused.", "%(num)d monitors paused.", done)
    elif action == "resume":
        said = ngettext("%(num)d monitor resumed.", "%(num)d monitors resumed.", done)
    else:
        said = ngettext("%(num)d monitor deleted.", "%(num)d monitors deleted.", done)
    return said % {"num": done}
