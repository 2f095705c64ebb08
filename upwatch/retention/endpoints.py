"""GET /retention/notifications (seed 19, contract §12)."""

from __future__ import annotations

from upwatch.callers.dependencies import PersonUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.routes import Routes
from upwatch.retention.schemas import RetentionNotificationOut
from upwatch.retention.service import RetentionService

router = Routes("/retention", "retention", (401, 429, 500))


@router.get("/notifications", operation_id="listRetentionNotifications")
async def list_retention_notifications(
    user: PersonUser, session: Session, runtime: RuntimeDep
) -> list[RetentionNotificationOut]:
    """Data of the caller's that expires soon, soonest first: one record per data type and
    expiry date, made seven days ahead, with whether the e-mail about it was delivered.
    Data goes in weekly batches (Mondays, 00:00 UTC) once it is older than the plan's
    `retentionDays`; daily aggregates stay at least 90 days on every plan
    (docs/retention.md)."""
    return await RetentionService(session, runtime).upcoming(user)
