from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from upwatch.accounts.schemas import Role


class AdminUserItem(BaseModel):
    id: str
    email: str
    firstName: str
    lastName: str
    roles: list[Role]
    subscription: Literal["free", "pro"]
    subscriptionStatus: str
    createdAt: datetime
