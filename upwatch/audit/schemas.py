"""Shapes of the audit log's lists."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

from upwatch.audit.kinds import KINDS
from upwatch.kit.inputs import Input, worded
from upwatch.models import AuditEvent

# The kinds as the schema's enum (a list filter by an unknown kind is a 422); built from the
# one tuple of kinds, which a type checker reads as plain text.
if TYPE_CHECKING:
    KindName = str
else:
    KindName = Literal[KINDS]


Count = Annotated[int, Field(ge=0, le=1_000_000)]
FileDigest = Annotated[
    str,
    StringConstraints(
        pattern=worded(r"^[0-9a-f]{64}$", "a SHA-256 digest: 64 lowercase hexadecimal digits")
    ),
    Field(description="The SHA-256 of the file applied, in hex"),
]


class ActorOut(BaseModel):
    id: str | None = Field(description="The account that acted; null when nobody was signed in")
    label: str = Field(description="Its e-mail address when it acted")


class TargetOut(BaseModel):
    type: str = Field(description="What was acted on: account, api_key, member, project, ...")
    id: str | None
    label: str = Field(description="How it was named then (an e-mail, a key's prefix, a name)")


class AuditEventOut(BaseModel):
    id: str
    occurredAt: datetime
    kind: str = Field(description="`<thing>.<what happened>`, one of docs/audit-log.md's kinds")
    actor: ActorOut
    via: str = Field(description='How the actor acted: "password", "api_key:<id>", ... or ""')
    accountId: str | None = Field(description="The account the event concerns")
    projectId: str | None
    target: TargetOut
    address: str = Field(description="The client address of the request")
    userAgent: str
    details: dict[str, Any] = Field(description="Small facts (a role, counts); never a secret")

    @classmethod
    def of(cls, event: AuditEvent) -> AuditEventOut:
        return cls(
            id=event.id,
            occurredAt=event.occurred_at,
            kind=event.kind,
            actor=ActorOut(id=event.actor_id, label=event.actor_label),
            via=event.via,
            accountId=event.account_id,
            projectId=event.project_id,
            target=TargetOut(type=event.target_type, id=event.target_id, label=event.target_label),
            address=event.address,
            userAgent=event.user_agent,
            details=dict(event.details or {}),
        )


class ConfigApplied(Input):
    """What one run of `upwatch apply` did, as the command counted it."""

    created: Count = 0
    updated: Count = 0
    replaced: Count = 0
    deleted: Count = 0
    unchanged: Count = 0
    fileDigest: FileDigest | None = None
