"""Recording audit events.

``record`` adds the event to the caller's transaction: it is stored exactly when the change it
describes is, and a refused request (rolled back) leaves no trace, except for the events that
are about the refusal (a failed sign-in), which the caller commits on purpose
(``keep_changes``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.audit.kinds import KINDS
from upwatch.kit.origin import request_origin
from upwatch.models import AuditEvent, User


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
) -> None:
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
    session.add(
        AuditEvent(
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
    )
