from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from upwatch.kit.schemas import Role


class AdminUserItem(BaseModel):
    id: str
    email: str
    firstName: str
    lastName: str
    roles: list[Role]
    subscription: str = Field(description="free or pro, or a plan the operator defined")
    subscriptionStatus: str
    createdAt: datetime
