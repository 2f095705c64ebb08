"""Recording audit events.

``record`` adds the event to the caller's transaction: it is stored exactly when the change it
describes is, and a refused request (rolled back) leaves no trace, except for the events that
are about the refusal (a failed sign-in), which the caller commits on purpose
(``keep_changes``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.audit import kinds
from upwatch.audit.kinds import KINDS
from upwatch.audit.repository import AuditFilter, AuditRepository
from upwatch.audit.schemas import ConfigApplied
from upwatch.kit.errors import Forbidden, NotFound, ValidationFailed
from upwatch.kit.origin import request_origin
from upwatch.kit.repository import Listed
from upwatch.models import AuditEvent, User
from upwatch.runtime import DomainService, Runtime, uses


async def record(
    session: AsyncSession,
    kind: str,
    at: datetime,
    *,
    actor: User | None,
    account_id: str | None = None,
    project_id: str | None = None,
    target_type: str = "",
    target_id: str | None = None,
    target_label: str = "",
    via: str = "",
    details: Mapping[str, str | int | bool | None] | None = None,
) -> AuditEvent:
    """Append one event at ``at`` (the service clock's now).

    ``actor`` is who acted (None: nobody signed in, e.g. a failed sign-in); an API key acting
    for its owner is named in ``via`` ("api_key:<prefix>") unless given. ``account_id`` is
    the person the event concerns and defaults to the actor: it is what that person's own
    security events list. ``details`` holds small facts, never a secret. Address and user
    agent come from the current request (empty outside one)."""
    if kind not in KINDS:
        raise ValueError(f"unknown audit event kind {kind!r}")
    origin = request_origin.get()
    if not via and actor is not None and actor.grant is not None:
        via = f"api_key:{actor.grant.key_id}"
    event = AuditEvent(
        occurred_at=at,
        kind=kind,
        actor_id=actor.id if actor is not None else None,
        actor_label=actor.email if actor is not None else "",
        via=via,
        account_id=account_id if account_id is not None else (actor.id if actor else None),
        project_id=project_id,
        target_type=target_type,
        target_id=target_id,
        target_label=target_label[:320],
        address=origin.address,
        user_agent=origin.user_agent,
        details=dict(details or {}),
    )
    session.add(event)
    return event


def secrets_changed(
    before: Mapping[str, Any], after: Mapping[str, Any], is_secret: Callable[[str], bool]
) -> list[str]:
    """The secret paths (``url``, ``headers.X``, ``config.webhookUrl``) whose value differs
    between two states of an object: what a ``*.secret_changed`` event names, never the
    values. A nested mapping (headers, config) is compared key by key, one level down."""
    changed: list[str] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if isinstance(old, Mapping) or isinstance(new, Mapping):
            old_part = old if isinstance(old, Mapping) else {}
            new_part = new if isinstance(new, Mapping) else {}
            for inner in sorted(set(old_part) | set(new_part)):
                path = f"{name}.{inner}"
                if is_secret(path) and old_part.get(inner) != new_part.get(inner):
                    changed.append(path)
        elif is_secret(name) and old != new:
            changed.append(name)
    return changed


class AuditLog(DomainService):
    """Who reads which events: a project's owner its project's, an administrator every one,
    each person the events about their own account."""

    events = uses(AuditRepository)

    async def of_project(
        self, caller: User, project_id: str, only: AuditFilter, limit: int, offset: int
    ) -> Listed[AuditEvent]:
        owner = await self.events.owner_of(caller, project_id)
        if owner is None:
            raise NotFound("no such project")
        if owner != caller.id and not caller.is_admin:
            raise Forbidden("a project's audit log is for its owner")
        return await self.events.page(replace(only, project_id=project_id), limit, offset)

    async def of_account(
        self, caller: User, only: AuditFilter, limit: int, offset: int
    ) -> Listed[AuditEvent]:
        return await self.events.page(replace(only, account_id=caller.id), limit, offset)

    async def every(self, only: AuditFilter, limit: int, offset: int) -> Listed[AuditEvent]:
        """The administrators' view (the route admits administrators only)."""
        return await self.events.page(only, limit, offset)


def audit_filter(
    kind: str | None,
    since: datetime | None,
    until: datetime | None,
    project_id: str | None = None,
    account_id: str | None = None,
) -> AuditFilter:
    """The filter of a list's query; 422 for an unknown kind or ``from`` after ``to``."""
    if kind is not None and kind not in KINDS:
        raise ValidationFailed.on("kind", "not a kind of audit event (docs/audit-log.md)")
    if since is not None and until is not None and since > until:
        raise ValidationFailed.on("from", "must not be after to")
    return AuditFilter(
        project_id=project_id, account_id=account_id, kind=kind, since=since, until=until
    )


async def config_applied(
    session: AsyncSession, runtime: Runtime, caller: User, project_id: str, run: ConfigApplied
) -> AuditEvent:
    """Record a run of `upwatch apply` on the project, in the words of the command that ran it
    (the changes themselves went through the API, each under its own rules)."""
    if await AuditRepository(session).owner_of(caller, project_id) is None:
        raise NotFound("no such project")
    event = await record(
        session,
        kinds.CONFIG_APPLIED,
        runtime.clock.now(),
        actor=caller,
        project_id=project_id,
        target_type="project",
        target_id=project_id,
        details=run.model_dump(exclude_none=True),
    )
    await session.flush()
    return event
