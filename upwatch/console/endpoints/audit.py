"""The audit log's pages: a project's (its owner), every event (administrators), and the
visitor's own security events. Filters are a GET form (kind, first and last day in the
visitor's time zone); pages are links, so all of it works without a script."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any, Final
from urllib.parse import urlencode
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import APIRouter
from fastapi.responses import Response

from upwatch.audit import kinds
from upwatch.audit.kinds import KINDS
from upwatch.audit.repository import AuditFilter
from upwatch.audit.schemas import AuditEventOut
from upwatch.audit.service import AuditLog, audit_filter
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage, errors_of, status_of
from upwatch.kit.errors import ProblemError, ValidationFailed
from upwatch.kit.languages import N_
from upwatch.kit.repository import Listed
from upwatch.models import AuditEvent
from upwatch.projects.repository import ProjectRepository

router = APIRouter(prefix="/app")
ROWS: Final = 50
OFFSET_LIMIT: Final = 2**31


def _zone(page: Page) -> ZoneInfo:
    try:
        return ZoneInfo(page.zone)
    except (ValueError, ZoneInfoNotFoundError):
        return ZoneInfo("UTC")


def _day(page: Page, field: str, end: bool) -> datetime | None:
    """A day of the form as the instant it starts (or ends) in the visitor's time zone."""
    text = page.request.query_params.get(field, "")
    if not text:
        return None
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise ValidationFailed.on(field, page.gettext("a day like 2026-11-27")) from None
    instant = datetime.combine(day, time.max if end else time.min, _zone(page))
    try:
        # A day at either end of the calendar may not exist in UTC (year 0 or 10000).
        return instant.astimezone(UTC)
    except OverflowError:
        raise ValidationFailed.on(
            field, page.gettext("a day from 0002-01-01 to 9998-12-31")
        ) from None


def _chosen(page: Page) -> tuple[dict[str, str], AuditFilter, int]:
    """The form's values as shown again, the filter they make, and the page's offset."""
    query = page.request.query_params
    shown = {name: query.get(name, "") for name in ("kind", "from", "to")}
    try:
        offset = min(max(int(query.get("offset", "0")), 0), OFFSET_LIMIT)
    except ValueError:
        offset = 0
    only = audit_filter(shown["kind"] or None, _day(page, "from", False), _day(page, "to", True))
    return shown, only, offset


async def _log_page(
    page: Page,
    action: str,
    title: str,
    section: str,
    read: Any,
    **context: Any,
) -> Response:
    """One page of a view: ``read(filter, offset)`` gives the events."""
    status, errors = 200, {}
    try:
        shown, only, offset = _chosen(page)
        events: Listed[AuditEvent] = await read(only, offset)
    except ProblemError as exc:
        if exc.status == 404:
            page.not_found(N_("project"))
        status, errors = status_of(exc), errors_of(exc, page.words)
        shown = {name: page.request.query_params.get(name, "") for name in ("kind", "from", "to")}
        offset, events = 0, Listed([], 0)
    kept = {k: v for k, v in shown.items() if v}
    context.setdefault("every", False)
    return page.html(
        "audit_log.html",
        status,
        title=title,
        section=section,
        action=action,
        events=[AuditEventOut.of(e) for e in events.rows],
        total=events.total,
        offset=offset,
        rows=ROWS,
        kinds=KINDS,
        words={kind: page.gettext(kinds.WORDS.get(kind, kind)) for kind in KINDS},
        chosen=shown,
        newer=f"{action}?{urlencode({**kept, 'offset': max(offset - ROWS, 0)})}",
        older=f"{action}?{urlencode({**kept, 'offset': offset + ROWS})}",
        errors=errors,
        **context,
    )


@router.get("/projects/{project_id}/audit-log", openapi_extra=offers("listProjectAuditLog"))
async def project_log(project_id: str, page: SignedInPage) -> Response:
    access = await ProjectRepository(page.session).access(page.user, project_id)
    if access is None:
        page.not_found(N_("project"))
    log = AuditLog(page.session, page.runtime)

    async def read(only: AuditFilter, offset: int) -> Listed[AuditEvent]:
        return await log.of_project(page.user, project_id, only, ROWS, offset)

    return await _log_page(
        page,
        f"/app/projects/{project_id}/audit-log",
        page.gettext("Audit log of %(name)s") % {"name": access.project.name},
        "projects",
        read,
        back=(
            f"/app/projects/{project_id}",
            page.gettext("Back to %(name)s") % {"name": access.project.name},
        ),
    )


@router.get("/admin/audit-log", openapi_extra=offers("adminListAuditLog"))
async def admin_log(page: SignedInPage) -> Response:
    if not page.user.is_admin:
        page.not_found(N_("page"))
    log = AuditLog(page.session, page.runtime)

    async def read(only: AuditFilter, offset: int) -> Listed[AuditEvent]:
        return await log.every(only, ROWS, offset)

    return await _log_page(
        page,
        "/app/admin/audit-log",
        page.gettext("Audit log of the service"),
        "admin",
        read,
        back=("/app/admin", page.gettext("Back to administration")),
        every=True,
    )


@router.get("/settings/security-events", openapi_extra=offers("listSecurityEvents"))
async def own_events(page: SignedInPage) -> Response:
    log = AuditLog(page.session, page.runtime)

    async def read(only: AuditFilter, offset: int) -> Listed[AuditEvent]:
        return await log.of_account(page.user, only, ROWS, offset)

    return await _log_page(
        page,
        "/app/settings/security-events",
        page.gettext("Your security events"),
        "settings",
        read,
        back=("/app/settings", page.gettext("Back to settings")),
    )
