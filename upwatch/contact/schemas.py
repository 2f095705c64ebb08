from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from upwatch.accounts.schemas import Email
from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input


class ContactRequest(Input):
    name: Annotated[str, Field(min_length=2, max_length=100, pattern=SINGLE_LINE_PATTERN)]
    email: Email
    subject: Annotated[str, Field(min_length=1, max_length=200, pattern=SINGLE_LINE_PATTERN)]
    message: Annotated[str, Field(min_length=1, max_length=5000)]


class ContactUpdate(Input):
    """Optional body of the admin follow-up; an absent ``contacted`` means true."""

    contacted: bool = True
    admin_notes: Annotated[str, Field(max_length=10_000)] | None = None


class ContactSubmissionOut(BaseModel):
    id: str
    name: str
    email: str
    subject: str
    message: str
    contacted: bool
    admin_notes: str | None
    createdAt: datetime
    updatedAt: datetime
