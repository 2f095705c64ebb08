"""Response shapes of the sessions list."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from upwatch.kit.schemas import RowOut

SessionKind = Literal["api", "console"]


class SessionOut(RowOut):
    id: str = Field(description="The session's id, for `DELETE /users/me/sessions/{id}`")
    kind: SessionKind = Field(
        description="`api`: a login through `POST /auth/login` (its refresh tokens); "
        "`console`: a web console sign-in"
    )
    created_at: datetime = Field(description="When the person signed in")
    last_used_at: datetime = Field(
        description="`api`: the latest refresh (or the login); `console`: the latest page "
        "view, within five minutes"
    )
    expires_at: datetime = Field(description="When it ends unless used (refreshed) again")
    address: str = Field(description="The client address of the latest sign-in or refresh")
    user_agent: str = Field(description="The `User-Agent` of the latest sign-in or refresh")
    current: bool = Field(description="The session this request is made in")


class EndedSessionsOut(RowOut):
    ended: int = Field(description="How many sessions were ended")
