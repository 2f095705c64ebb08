from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input
from upwatch.kit.partial import Omittable
from upwatch.kit.schemas import Email, RowOut


class ContactRequest(Input):
    name: Annotated[str, Field(min_length=2, max_length=100, pattern=SINGLE_LINE_PATTERN)]
    email: Email
    subject: Annotated[str, Field(min_length=1, max_length=200, pattern=SINGLE_LINE_PATTERN)]
    message: Annotated[str, Field(min_length=1, max_length=5000)]


class ContactSubmissionOut(RowOut):
    id: str
    name: str
    email: str
    subject: str
    message: str
    contacted: bool
    admin_notes: str | None = Field(alias="admin_notes")  # snake_case in the seed API
    created_at: datetime
    updated_at: datetime


class ContactUpdate(Input):
    """Optional body of the admin follow-up; `contacted` left out means true, `admin_notes`
    left out stays as it is and null clears it."""

    resource = ContactSubmissionOut

    contacted: Omittable[bool] = Field(default=None, description="Left out: true")
    admin_notes: Annotated[str, Field(max_length=10_000)] | None = Field(
        default=None, description="null clears the notes"
    )
