from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from upwatch.kit.inputs import Input
from upwatch.kit.schemas import Role

SubscriptionState = Literal["active", "past_due", "canceled", "trialing"]


class Limits(BaseModel):
    monitorCount: int
    statusPageCount: int
    notificationChannels: list[str]
    checkFrequencyMinutes: int
    retentionDays: int
    projectCount: int
    teamMembersPerProject: int
    teamMembers: int
    apiCallsPerDay: int
    storageLimit: int = Field(description="megabytes")


class UsageItem(BaseModel):
    current: float
    limit: float
    percentage: float


class Usage(BaseModel):
    monitors: UsageItem
    statusPages: UsageItem
    teamMembers: UsageItem
    projects: UsageItem
    apiCalls: UsageItem
    storage: UsageItem = Field(description="megabytes")


class SubscriptionStatus(BaseModel):
    currentPlan: str = Field(description="free or pro, or a plan the operator defined")
    status: SubscriptionState
    limits: Limits
    usage: Usage


class SubscriptionChanged(BaseModel):
    message: str
    subscription: SubscriptionStatus


class EmptyBody(Input):
    """The seed's upgrade takes an empty JSON object."""


class AdminUserUpdate(Input):
    """Fields left out or null stay as they are."""

    roles: list[Role] | None = Field(default=None, min_length=1, max_length=4)
    plan: str | None = Field(default=None, min_length=1, max_length=50)
    subscriptionStatus: SubscriptionState | None = None
