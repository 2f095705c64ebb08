"""Request and response shapes of monitors, check results, statistics and regions."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from upwatch.kit.declared import DeclaredKey, SecretRefOut, SecretRefsIn, shown_refs
from upwatch.kit.inputs import (
    HEADER_NAME_PATTERN,
    HTTP_URL_PATTERN,
    SINGLE_LINE_PATTERN,
    Input,
    TagInWords,
    iso_text_only,
    worded,
)
from upwatch.kit.partial import Omittable
from upwatch.kit.schemas import RowOut
from upwatch.monitors import secrets
from upwatch.probes.assertions import Operator, Source

MonitorType = Literal["http", "tcp", "dns", "tls", "heartbeat"]
HttpMethod = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
RecordType = Literal["A", "AAAA", "CNAME", "MX", "TXT", "NS"]
Status = Literal["up", "down", "degraded", "paused", "pending"]
Period = Literal["24h", "7d", "30d", "90d"]
# A query bound: ISO 8601 text as published, never a number read as Unix time.
QueryTime = Annotated[datetime, BeforeValidator(iso_text_only)]

Name = Annotated[str, Field(min_length=1, max_length=100, pattern=SINGLE_LINE_PATTERN)]
HeaderText = Annotated[str, Field(max_length=1000, pattern=SINGLE_LINE_PATTERN)]
StatusCode = Annotated[int, Field(ge=100, le=599)]
Host = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        pattern=worded(
            r"^[A-Za-z0-9._:\[\]-]+$",
            "a host name or IP address: letters, digits, dots, hyphens, colons and brackets",
        ),
    ),
]
Url = Annotated[str, Field(min_length=1, max_length=2048, pattern=HTTP_URL_PATTERN)]
Headers = Annotated[
    dict[str, HeaderText],
    Field(
        max_length=50,
        description="Values of Authorization, Cookie, Proxy-Authorization and of the headers "
        "named in `secretHeaders` are masked in responses; sent back masked, they keep the "
        "stored value",
    ),
]
HeaderName = Annotated[str, Field(min_length=1, max_length=100, pattern=HEADER_NAME_PATTERN)]
SecretHeaders = Annotated[
    list[HeaderName],
    Field(
        max_length=50,
        description="Names of further headers whose values are secret (any letter case)",
    ),
]
StatusCodes = Annotated[list[StatusCode], Field(max_length=50)]
Interval = Annotated[int, Field(ge=10, le=86_400)]
Timeout = Annotated[float, Field(gt=0, le=60)]
Retries = Annotated[int, Field(ge=0, le=10)]


class AssertionIn(Input):
    """A condition on an HTTP response; the first that does not hold fails the check with a
    message naming it."""

    source: Source = Field(
        description="What is read: a JSONPath into the JSON body (`path`), a header (`path` "
        "is its name), the body text, the response time in ms, the status code"
    )
    operator: Operator
    path: Annotated[str, Field(min_length=1, max_length=500)] | None = Field(
        default=None, examples=["$.status", "content-type"]
    )
    value: Annotated[str, Field(max_length=500)] | int | float | bool | None = Field(
        default=None,
        description="The expected value (a pattern for `matches`, a number for the "
        "orderings); left out for `exists` and `notExists`",
    )

    def stored(self) -> dict[str, Any]:
        """As kept on the monitor: `value` only when it was given (null is a value)."""
        kept: dict[str, Any] = {"source": self.source, "operator": self.operator}
        if self.path is not None:
            kept["path"] = self.path
        if "value" in self.model_fields_set:
            kept["value"] = self.value
        return kept


class MonitorFields(Input):
    """Fields shared by create and update; which are required depends on ``type``."""

    name: Name | None = None
    url: Url | None = None
    method: HttpMethod | None = None
    headers: Headers | None = None
    secretHeaders: SecretHeaders | None = None
    body: Annotated[str, Field(max_length=65_536)] | None = None
    expectedStatusCodes: StatusCodes | None = None
    keyword: Annotated[str, Field(min_length=1, max_length=500)] | None = None
    host: Host | None = None
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    recordType: RecordType | None = None
    expectedValue: Annotated[str, Field(max_length=500)] | None = None
    intervalSeconds: Interval | None = None
    timeoutSeconds: Timeout | None = None
    retries: Retries | None = None
    degradedThresholdMs: Annotated[float, Field(gt=0, le=600_000)] | None = None
    quorum: Annotated[int, Field(ge=1, le=50)] | None = None
    regionIds: (
        Annotated[list[Annotated[str, Field(max_length=32)]], Field(max_length=50)] | None
    ) = None
    isActive: bool | None = None
    assertions: Annotated[list[AssertionIn], Field(max_length=20)] | None = Field(
        default=None,
        description="HTTP monitors: conditions on the response beyond its status code, "
        "checked in order (`[]` removes them)",
    )
    dependsOn: (
        Annotated[list[Annotated[str, Field(max_length=32)]], Field(max_length=20)] | None
    ) = Field(
        default=None,
        description="Monitors of the same project this one depends on (no cycles). While "
        "one of them is down, this monitor's failures open no incident and send no alert "
        "of their own: they are listed under that monitor's incident. `[]` removes them",
    )
    schedule: (
        Annotated[str, Field(min_length=1, max_length=100, pattern=SINGLE_LINE_PATTERN)] | None
    ) = Field(
        default=None,
        description="Heartbeat monitors: a cron schedule (five fields, or @hourly, @daily, "
        "...) read in `timezone`; the job is late when no ping arrives by the schedule's next "
        "time after the last ping, plus `graceSeconds`. Without it: every `intervalSeconds`",
        examples=["0 2 * * *"],
    )
    timezone: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="Heartbeat monitors: the IANA zone of `schedule` (UTC)"
    )
    graceSeconds: Annotated[int, Field(ge=0, le=86_400)] | None = Field(
        default=None,
        description="Heartbeat monitors: how late a ping may be, and how long a started job "
        "may run, before the monitor is down (60)",
    )
    escalationPolicyId: Annotated[str, Field(max_length=32)] | None = Field(
        default=None,
        description="An escalation policy of the same project: it decides who is paged, step "
        "by step; none (or null on update): every provider of the project at once",
    )
    key: DeclaredKey | None = Field(default=None, description="null on update removes it")
    secretRefs: SecretRefsIn | None = None


class _NewMonitor(MonitorFields):
    projectId: Annotated[str, Field(max_length=32)]
    name: Name


# One model per type, so the schema itself says which target fields each type needs.
class HttpMonitorCreate(_NewMonitor):
    type: Literal["http"]
    url: Url


class TcpMonitorCreate(_NewMonitor):
    type: Literal["tcp"]
    host: Host
    port: Annotated[int, Field(ge=1, le=65535)]


class DnsMonitorCreate(_NewMonitor):
    type: Literal["dns"]
    host: Host


class TlsMonitorCreate(_NewMonitor):
    type: Literal["tls"]
    host: Host


class HeartbeatMonitorCreate(_NewMonitor):
    type: Literal["heartbeat"]


NewMonitor = (
    HttpMonitorCreate
    | TcpMonitorCreate
    | DnsMonitorCreate
    | TlsMonitorCreate
    | HeartbeatMonitorCreate
)
MonitorCreate = Annotated[NewMonitor, TagInWords("type")]


class MonitorOut(RowOut):
    id: str
    project_id: str
    name: str
    type: MonitorType
    url: str | None
    method: str
    headers: dict[str, str] = Field(description="Secret values are masked")
    secret_headers: list[str]
    body: str | None
    expected_status_codes: list[int]
    keyword: str | None
    host: str | None
    port: int | None
    record_type: str | None
    expected_value: str | None
    interval_seconds: int
    timeout_seconds: float
    retries: int
    degraded_threshold_ms: float | None
    quorum: int | None
    region_ids: list[str]
    escalation_policy_id: str | None
    assertions: list[dict[str, Any]] = Field(
        description="As given: {source, operator, path, value}"
    )
    depends_on: list[str]
    schedule: str | None
    timezone: str | None
    grace_seconds: int | None
    key: str | None = Field(description="Its key in a config file (`upwatch apply`)")
    secret_refs: dict[str, SecretRefOut] = Field(
        description="Secret headers a config file gives by environment variable"
    )
    last_ping_at: datetime | None = Field(description="heartbeat monitors: the last success")
    last_start_at: datetime | None = Field(description="heartbeat monitors: the last /start")
    last_fail_at: datetime | None = Field(description="heartbeat monitors: the last /fail")
    is_active: bool
    status: Status
    last_checked_at: datetime | None
    heartbeat_url: str | None = Field(description="heartbeat monitors: where the job reports")
    created_at: datetime
    updated_at: datetime

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        """Secret header values masked; the heartbeat token as the address the job reports
        to (``context``: the server's public URL)."""
        token = row.heartbeat_token
        return {
            "headers": secrets.masked(
                {str(k): str(v) for k, v in (row.headers or {}).items()}, row.secret_headers or []
            ),
            "heartbeat_url": f"{context['public_url']}/heartbeat/{token}" if token else None,
            "secret_refs": shown_refs(row.secret_refs),
        }


class MonitorUpdate(MonitorFields):
    """Fields left out stay as they are. `null` clears `keyword`, `body`, `expectedValue`,
    `degradedThresholdMs`, `quorum`, `escalationPolicyId`, `schedule`, `timezone` and
    `graceSeconds`, restores the default `recordType` (A) and TLS `port` (443), and leaves
    `regionIds`, `assertions`, `dependsOn` and `isActive` unchanged.
    The target a monitor's type checks may not be null: `url` of an http monitor, `host` and
    `port` of a tcp monitor, `host` of a dns or tls monitor (422)."""

    resource = MonitorOut

    name: Omittable[Name] = None
    method: Omittable[HttpMethod] = None
    headers: Omittable[Headers] = Field(default=None, description="`{}` removes every header")
    secretHeaders: Omittable[SecretHeaders] = Field(
        default=None,
        description="A header stays secret until its value is replaced or removed: unmarking "
        "it alone does not reveal the stored value",
    )
    expectedStatusCodes: Omittable[StatusCodes] = Field(
        default=None, description="`[]` means 200-399"
    )
    intervalSeconds: Omittable[Interval] = None
    timeoutSeconds: Omittable[Timeout] = None
    retries: Omittable[Retries] = None


class CheckTimingsOut(RowOut):
    """Milliseconds per phase of the check; null when the phase did not happen (no TLS on
    plain HTTP, no DNS for an address) or was not measured."""

    dns_ms: float | None
    connect_ms: float | None
    tls_ms: float | None
    first_byte_ms: float | None
    total_ms: float | None


class CheckResultOut(RowOut):
    # Result keys are integers in the database, strings in the API.
    model_config = ConfigDict(coerce_numbers_to_str=True)

    id: str
    monitor_id: str
    region_id: str
    status: Literal["up", "down", "degraded"]
    status_code: int | None
    response_time_ms: float | None
    error: str | None
    error_kind: str | None
    checked_at: datetime
    timings: CheckTimingsOut | None = Field(
        default=None, description="what the probe measured per phase; null when not measured"
    )

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        """The timings are another row (``context``: that row or None)."""
        return {"timings": context["timing"]}


class StatsOut(BaseModel):
    uptimePercentage: float | None
    totalChecks: int
    upChecks: int
    downChecks: int
    avgResponseTimeMs: float | None
    p50ResponseTimeMs: float | None
    p95ResponseTimeMs: float | None
    p99ResponseTimeMs: float | None
    lastCheckedAt: datetime | None
    status: Status


class ErrorBudgetOut(BaseModel):
    allowedMinutes: float = Field(description="Downtime the target allows in the period")
    usedMinutes: float
    remainingMinutes: float = Field(description="Negative once the budget is spent")


class ApdexOut(BaseModel):
    threshold: float = Field(description="T in ms: satisfied up to T, tolerating up to 4T")
    score: float | None = Field(description="0 to 1; null without checks")
    satisfied: int
    tolerating: int
    frustrated: int = Field(description="Slower than 4T, and every failed check")


class SlaOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: date = Field(alias="from", description="First UTC day of the period")
    to: date = Field(description="Last UTC day of the period, included")
    target: float
    uptimePercentage: float | None = Field(
        description="Checks up or degraded, of those outside maintenance; null without checks"
    )
    downtimeMinutes: float = Field(
        description="The failed share of the period's minutes outside maintenance (up to now)"
    )
    maintenanceMinutes: float
    incidents: int = Field(description="Incidents of the monitor that started in the period")
    mttrMinutes: float | None = Field(description="Mean time to resolve the resolved ones")
    mtbfMinutes: float | None = Field(description="Time up per incident")
    errorBudget: ErrorBudgetOut
    apdex: ApdexOut


class RegionIn(Input):
    code: Annotated[
        str,
        Field(
            min_length=1,
            max_length=50,
            pattern=worded(
                r"^[a-z0-9][a-z0-9-]*$",
                "lower-case letters, digits and hyphens, not starting with a hyphen",
            ),
        ),
    ]
    name: Name


class RegionOut(RowOut):
    id: str
    code: str
    name: str
    builtin: bool
    online: bool = Field(description="a worker for this region reported in the last minute")
    workers: int = Field(description="workers of this region online (0 when it is offline)")
    last_seen_at: datetime | None

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        """``context``: since when a report counts as online. What workers last reported to
        the database, not what this process remembers."""
        online = row.last_seen_at is not None and row.last_seen_at >= context["since"]
        return {"online": online, "workers": row.workers if online else 0}


class MonitorRegionStats(BaseModel):
    regionId: str
    name: str
    code: str
    status: Status
    lastCheckedAt: datetime | None
    uptimePercentage: float | None
    avgResponseTimeMs: float | None
    p95ResponseTimeMs: float | None
    totalChecks: int


class MonitorRegionsOut(BaseModel):
    monitorId: str
    regions: list[MonitorRegionStats]


class DashboardUptimeItem(BaseModel):
    monitorId: str
    name: str
    projectId: str
    status: Status
    uptime24h: float | None
    uptime7d: float | None
    uptime30d: float | None
    lastCheckedAt: datetime | None


class DashboardPerformanceItem(BaseModel):
    monitorId: str
    name: str
    projectId: str
    avgResponseTimeMs: float | None
    p50ResponseTimeMs: float | None
    p95ResponseTimeMs: float | None
    p99ResponseTimeMs: float | None
    checks24h: int
