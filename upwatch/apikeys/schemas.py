"""Request and response shapes of API keys."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input, Instant
from upwatch.kit.schemas import RowOut

Scope = Literal["read", "write"]


class ApiKeyCreate(Input):
    name: Annotated[str, Field(min_length=1, max_length=100, pattern=SINGLE_LINE_PATTERN)]
    scope: Scope = Field(description="read: GET only; write: also change the project's objects")
    expiresAt: Instant | None = Field(default=None, description="Default: never")


class ApiKeyOut(RowOut):
    id: str
    project_id: str
    name: str
    scope: Scope
    prefix: str = Field(description="The key's first characters, to tell keys apart")
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None = Field(description="Within a minute")


class NewApiKeyOut(ApiKeyOut):
    key: str = Field(
        description="The key itself: send it as `Authorization: Bearer <key>`. Shown in this "
        "answer only; Upwatch keeps its SHA-256 digest."
    )
