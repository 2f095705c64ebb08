from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from upwatch.kit.schemas import Role, RowOut
from upwatch.mail.sender import masked_body


class AdminUserItem(BaseModel):
    id: str
    email: str
    firstName: str
    lastName: str
    roles: list[Role]
    subscription: str = Field(description="free or pro, or a plan the operator defined")
    subscriptionStatus: str
    createdAt: datetime


class OutboxMailOut(RowOut):
    """An e-mail in the outbox, as an administrator may read it."""

    id: str
    to: str = Field(description="The recipient's address")
    subject: str
    body: str = Field(
        description="The text; in password-reset, invitation and status-page subscription "
        "mail (confirm and unsubscribe links) every token a link carries is masked (`****`), "
        "and once reset or invitation mail is delivered or failed its body is removed"
    )
    category: str = Field(
        description="What the mail is about: password_reset, project_invitation, "
        "project_member_added, contact, ..."
    )
    status: Literal["pending", "sent", "failed"] = Field(
        description="pending: not sent yet (waiting for SMTP, or for its next attempt); "
        "sent; failed: the server refused it for good or every attempt failed"
    )
    attempts: int = Field(description="Delivery attempts so far (since the last resend)")
    last_error: str | None = Field(description="Why the latest attempt failed")
    next_attempt_at: datetime | None = Field(description="When a pending message is tried next")
    sent_at: datetime | None
    created_at: datetime

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        return {
            "to": row.to_address,
            "body": masked_body(row.category, row.body),
            "next_attempt_at": row.next_attempt_at if row.status == "pending" else None,
        }
