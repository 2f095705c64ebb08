"""Request and response shapes of escalation policies."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input
from upwatch.kit.partial import Omittable
from upwatch.kit.schemas import RowOut

Id = Annotated[str, Field(max_length=32)]
Name = Annotated[str, Field(min_length=1, max_length=100, pattern=SINGLE_LINE_PATTERN)]
# A day between steps at most: a longer wait is no longer escalation.
Delay = Annotated[
    int,
    Field(
        ge=0,
        le=1440,
        description="Minutes after the step before was paged (the first step: after the "
        "incident opened) without an acknowledgement",
    ),
]


class StepIn(Input):
    providerIds: Annotated[list[Id], Field(min_length=1, max_length=20)] = Field(
        description="Notification providers of the policy's project, paged together"
    )
    delayMinutes: Delay


Steps = Annotated[list[StepIn], Field(min_length=1, max_length=10)]


class StepOut(BaseModel):
    providerIds: list[str]
    delayMinutes: int


class EscalationPolicyOut(RowOut):
    id: str
    project_id: str
    name: str
    steps: list[StepOut]
    created_at: datetime
    updated_at: datetime


class EscalationPolicyCreate(Input):
    projectId: Id
    name: Name
    steps: Steps


class EscalationPolicyPatch(Input):
    """Change a policy; fields left out stay as they are. New `steps` replace the old ones;
    an incident already paged keeps the number of steps it paged."""

    resource = EscalationPolicyOut

    name: Omittable[Name] = None
    steps: Omittable[Steps] = None
