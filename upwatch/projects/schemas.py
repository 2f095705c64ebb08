from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input
from upwatch.kit.languages import Language
from upwatch.kit.schemas import Email, RowOut

ProjectName = Annotated[str, Field(min_length=1, max_length=100, pattern=SINGLE_LINE_PATTERN)]
Description = Annotated[str, Field(max_length=1000)]


class ProjectCreate(Input):
    name: ProjectName
    description: Description = ""


class ProjectOut(RowOut):
    id: str
    name: str
    description: str
    owner_id: str
    role: Literal["owner", "member", "admin"] = Field(description="the caller's role here")
    require_two_factor: bool = Field(
        description="members reach the project only once their account has a second factor "
        "(TOTP or a passkey); API keys are not affected. Set by the owner"
    )
    alert_language: Language = Field(
        description="the language of the alerts the project's notification providers send "
        "(a member's personal channels follow the member's own `language` setting)"
    )
    created_at: datetime
    updated_at: datetime

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        """The caller's role is not the project's (``context``: that role)."""
        return {"role": context["role"]}


class ProjectUpdate(Input):
    """Fields left out or null stay as they are."""

    resource = ProjectOut

    name: ProjectName | None = None
    description: Description | None = None
    requireTwoFactor: bool | None = Field(
        None,
        description="owner only (403 for anyone else who would change it); turning it on "
        "needs a second factor on the owner's own account first (409)",
    )
    alertLanguage: Language | None = Field(
        None,
        description="the language of the alerts the project's notification providers send: "
        "one of en, es, fr, de, it, pt, ru, zh, ja, ko",
    )


class InviteRequest(Input):
    email: Email


class AcceptInvitation(Input):
    token: Annotated[str, Field(min_length=1, max_length=256)]


class InvitationOut(BaseModel):
    projectId: str
    email: str
    userId: str | None
    role: Literal["member"]
    status: Literal["added", "pending"]


class MemberOut(BaseModel):
    projectId: str
    userId: str | None = Field(description="null for a pending invitation")
    invitationId: str | None = Field(description="set for a pending invitation")
    email: str
    firstName: str
    lastName: str
    role: Literal["owner", "member"]
    status: Literal["active", "pending"]
    createdAt: datetime
