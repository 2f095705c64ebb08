"""The audit log's three views: a project's (its owner), every event (administrators), and a
person's own security events."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from upwatch.audit.schemas import AuditEventOut, ConfigApplied, KindName
from upwatch.audit.service import AuditLog, audit_filter, config_applied
from upwatch.callers.dependencies import AdminUser, CurrentUser, PersonUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.errors import problem_responses
from upwatch.kit.inputs import Instant
from upwatch.kit.pagination import IdFilter, PageParams
from upwatch.kit.routes import Routes

projects = Routes("/projects", "audit log", (400, 401, 403, 404, 422, 429, 500))
admin = Routes("/admin", "audit log", (400, 401, 403, 422, 429, 500))
own = Routes("/users", "audit log", (400, 401, 403, 422, 429, 500))

Since = Annotated[
    Instant | None,
    Query(alias="from", description="Only events at or after this time (ISO 8601 with zone)"),
]
Until = Annotated[
    Instant | None, Query(description="Only events at or before this time (ISO 8601 with zone)")
]
Kind = Annotated[KindName | None, Query(description="Only events of this kind")]


@projects.get("/{id}/audit-log", operation_id="listProjectAuditLog")
async def project_audit_log(
    id: str,
    user: PersonUser,
    session: Session,
    runtime: RuntimeDep,
    page: PageParams,
    from_: Since = None,
    to: Until = None,
    kind: Kind = None,
) -> list[AuditEventOut]:
    """The project's security-relevant events, newest first: members invited, added and
    removed, API keys made and revoked, provider and monitor secrets changed, the project's
    two-factor rule, its deletion. For the project's owner and administrators: another member
    gets 403, anyone else 404, and an API key 403 (the audit log is an account's, not a
    key's). 422 for an unknown `kind` or `from` after `to`."""
    only = audit_filter(kind, from_, to)
    events = await AuditLog(session, runtime).of_project(user, id, only, page.limit, page.offset)
    page.total(events.total)
    return [AuditEventOut.of(e) for e in events.rows]


@admin.get("/audit-log", operation_id="adminListAuditLog")
async def admin_audit_log(
    _admin: AdminUser,
    session: Session,
    runtime: RuntimeDep,
    page: PageParams,
    from_: Since = None,
    to: Until = None,
    kind: Kind = None,
    projectId: IdFilter = None,
    accountId: IdFilter = None,
) -> list[AuditEventOut]:
    """Every audit event of the service, newest first (admin, super_admin), optionally of one
    project (`projectId`, deleted projects included) or about one account (`accountId`)."""
    only = audit_filter(kind, from_, to, project_id=projectId, account_id=accountId)
    events = await AuditLog(session, runtime).every(only, page.limit, page.offset)
    page.total(events.total)
    return [AuditEventOut.of(e) for e in events.rows]


@own.get(
    "/me/security-events",
    operation_id="listSecurityEvents",
    responses=problem_responses(401, 403),
)
async def security_events(
    user: PersonUser,
    session: Session,
    runtime: RuntimeDep,
    page: PageParams,
    from_: Since = None,
    to: Until = None,
    kind: Kind = None,
) -> list[AuditEventOut]:
    """The events about the caller's own account, newest first: sign-ins (failed ones
    included, with the address they came from), password, two-factor, passkey and session
    changes. An API key gets 403."""
    only = audit_filter(kind, from_, to)
    events = await AuditLog(session, runtime).of_account(user, only, page.limit, page.offset)
    page.total(events.total)
    return [AuditEventOut.of(e) for e in events.rows]


@projects.creates("recordConfigApplied", path="/{id}/config-applied")
async def record_config_applied(
    id: str, body: ConfigApplied, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> AuditEventOut:
    """Record that `upwatch apply` applied a config file to the project: what it counted
    (created, updated, replaced, deleted, unchanged) and the file's digest, as the event
    `config.applied` of the project's audit log. The command sends it after applying, with
    the project's write API key (a read key: 403); each change it made went through the API
    under its own rules. A project the caller cannot open: 404."""
    event = await config_applied(session, runtime, user, id, body)
    return AuditEventOut.of(event)
