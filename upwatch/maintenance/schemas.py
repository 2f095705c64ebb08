"""Request and response shapes of maintenance windows."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from upwatch.kit.declared import DeclaredKey
from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input, Instant
from upwatch.kit.partial import Omittable
from upwatch.kit.schemas import RowOut

Title = Annotated[str, Field(min_length=1, max_length=200, pattern=SINGLE_LINE_PATTERN)]
Id = Annotated[str, Field(max_length=32)]
Rule = Annotated[
    str,
    Field(
        min_length=1,
        max_length=500,
        description="An RFC 5545 RRULE (e.g. `FREQ=WEEKLY;BYDAY=SU`), repeated by the wall "
        "clock of `timezone` from `startsAt`; each occurrence lasts `endsAt - startsAt`. At "
        "most hourly. null or left out: one window from `startsAt` to `endsAt`.",
        examples=["FREQ=WEEKLY;BYDAY=SU"],
    ),
]
TimeZone = Annotated[
    str, Field(min_length=1, max_length=64, description="IANA name, e.g. Europe/Paris")
]
MonitorIds = Annotated[
    list[Id],
    Field(
        max_length=1000,
        description="Monitors of the same project; null or left out: the whole project, "
        "monitors added later included",
    ),
]


class MaintenanceWindowCreate(Input):
    projectId: Id
    title: Title
    startsAt: Instant
    endsAt: Instant
    rrule: Rule | None = None
    timezone: TimeZone = "UTC"
    monitorIds: MonitorIds | None = None
    key: DeclaredKey | None = None


class MaintenanceWindowOut(RowOut):
    id: str
    project_id: str
    title: str
    starts_at: datetime
    ends_at: datetime
    rrule: str | None
    timezone: str
    key: str | None = Field(description="Its key in a config file (`upwatch apply`)")
    monitor_ids: list[str] | None = Field(description="null: the whole project")
    active: bool = Field(description="An occurrence is on now")
    next_starts_at: datetime | None = Field(
        description="When the next occurrence starts; null when none is left"
    )
    created_at: datetime
    updated_at: datetime

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        """Which monitors, and the schedule read at the clock's now (``context``)."""
        return {
            "monitor_ids": context["monitor_ids"],
            "active": context["active"],
            "next_starts_at": context["next_starts_at"],
        }


class MaintenanceWindowPatch(Input):
    """Change a window; fields left out stay as they are. `rrule: null` makes it one-off;
    `monitorIds: null` makes it cover the whole project."""

    resource = MaintenanceWindowOut

    title: Omittable[Title] = None
    startsAt: Omittable[Instant] = None
    endsAt: Omittable[Instant] = None
    rrule: Rule | None = None
    timezone: Omittable[TimeZone] = None
    monitorIds: MonitorIds | None = None
    key: DeclaredKey | None = Field(default=None, description="null removes it")
