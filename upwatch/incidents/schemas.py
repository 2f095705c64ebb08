"""Request and response shapes of incidents and their timeline (seed 12, contract §8)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input, Instant
from upwatch.kit.partial import Omittable
from upwatch.kit.schemas import RowOut

IncidentStatus = Literal["investigating", "identified", "monitoring", "resolved"]
Severity = Literal["low", "medium", "high", "critical"]
Title = Annotated[str, Field(min_length=1, max_length=200, pattern=SINGLE_LINE_PATTERN)]
Description = Annotated[str, Field(max_length=10_000)]
Id = Annotated[str, Field(max_length=32)]
PlacedOn = Annotated[list[Id], Field(max_length=100)]
PAGES_HELP = (
    "Status pages of the incident's project that show it as a whole, besides the components "
    "of its monitor (an incident without a monitor shows on no page otherwise)"
)
COMPONENTS_HELP = (
    "Status-page components (of pages of the incident's project) the incident affects: their "
    "pages show it, and those components show its impact"
)


class IncidentCreate(Input):
    title: Title
    status: IncidentStatus = "investigating"
    severity: Severity = "medium"
    projectId: Id
    description: Description = ""
    monitorId: Id | None = Field(default=None, description="A monitor of the same project")
    startedAt: Instant | None = Field(default=None, description="Default: now")
    statusPageIds: PlacedOn = Field(default_factory=list, description=PAGES_HELP)
    componentIds: PlacedOn = Field(default_factory=list, description=COMPONENTS_HELP)


class IncidentUpdateCreate(Input):
    status: IncidentStatus | None = Field(default=None, description="Default: unchanged")
    message: Annotated[str, Field(min_length=1, max_length=5000)]


class IncidentUpdateOut(RowOut):
    # Timeline keys are integers in the database, strings in the API.
    model_config = ConfigDict(coerce_numbers_to_str=True)

    id: str
    status: IncidentStatus
    message: str
    internal: bool = Field(
        description="For members only (acknowledgement, escalation): status pages never show it"
    )
    created_at: datetime


class IncidentOut(RowOut):
    id: str
    title: str
    status: IncidentStatus
    severity: Severity
    project_id: str
    monitor_id: str | None
    description: str
    automatic: bool = Field(description="Opened by a monitor turning down")
    started_at: datetime
    resolved_at: datetime | None
    acknowledged_at: datetime | None = Field(
        description="When a member took it (POST /incidents/{id}/acknowledge)"
    )
    acknowledged_by: str | None = Field(description="The id of the member who acknowledged it")
    affected_monitor_ids: list[str] = Field(
        description="Monitors depending on this incident's monitor that went down meanwhile: "
        "their failures opened no incident of their own"
    )
    status_page_ids: list[str] = Field(description=PAGES_HELP)
    component_ids: list[str] = Field(description=COMPONENTS_HELP)
    escalation_step: int = Field(
        description="Steps of the monitor's escalation policy paged so far"
    )
    created_at: datetime
    updated_at: datetime
    updates: list[IncidentUpdateOut] = Field(description="The timeline, oldest first")
    evidence: dict[str, Any] | None = Field(
        default=None,
        description="Automatic incidents: what the failing check that opened it saw "
        "(phase, error class, addresses, status line, redacted headers, the body's first "
        "4 KB, the certificate; docs/failure-evidence.md). Members only: never on a status "
        "page",
    )

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        """The timeline is rows of its own (``context``: those of this incident), and so is
        the evidence (its opening check's result)."""
        return {
            "updates": context["updates"],
            "affected_monitor_ids": row.dependents or [],
            "evidence": context.get("evidence"),
        }


class IncidentPatch(Input):
    """Change an incident; fields left out stay as they are, and only `monitorId` may be
    null (it unlinks the monitor). A new `status` adds an entry to its timeline."""

    resource = IncidentOut

    title: Omittable[Title] = None
    status: Omittable[IncidentStatus] = None
    severity: Omittable[Severity] = None
    description: Omittable[Description] = None
    monitorId: Id | None = Field(default=None, description="null unlinks the monitor")
    startedAt: Omittable[Instant] = None
    statusPageIds: Omittable[PlacedOn] = Field(default=None, description=PAGES_HELP)
    componentIds: Omittable[PlacedOn] = Field(default=None, description=COMPONENTS_HELP)
