"""Request and response shapes of monitors, check results, statistics and regions."""

from __future__ import annotations

from datetime import date, datetime
from types import NoneType
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, create_model
from pydantic.alias_generators import to_snake
from pydantic.fields import FieldInfo

from upwatch.kit.declared import DeclaredKey, SecretRefOut, SecretRefsIn, shown_refs
from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input, TagInWords, iso_text_only, worded
from upwatch.kit.partial import Omittable
from upwatch.kit.schemas import RowOut
from upwatch.models import Monitor
from upwatch.monitors import secrets
from upwatch.probes.kind import accepts_none
from upwatch.probes.registry import KINDS, MonitorType

Status = Literal["up", "down", "degraded", "paused", "pending"]
Period = Literal["24h", "7d", "30d", "90d"]
# A query bound: ISO 8601 text as published, never a number read as Unix time.
QueryTime = Annotated[datetime, BeforeValidator(iso_text_only)]

Name = Annotated[str, Field(min_length=1, max_length=100, pattern=SINGLE_LINE_PATTERN)]
Interval = Annotated[int, Field(ge=10, le=86_400)]
Timeout = Annotated[float, Field(gt=0, le=60)]
Retries = Annotated[int, Field(ge=0, le=10)]


class _CommonFields(Input):
    """Fields every monitor has, whatever its type."""

    name: Name | None = None
    intervalSeconds: Interval | None = None
    timeoutSeconds: Timeout | None = None
    retries: Retries | None = None
    degradedThresholdMs: Annotated[float, Field(gt=0, le=600_000)] | None = None
    quorum: Annotated[int, Field(ge=1, le=50)] | None = None
    regionIds: (
        Annotated[list[Annotated[str, Field(max_length=32)]], Field(max_length=50)] | None
    ) = None
    isActive: bool | None = None
    dependsOn: (
        Annotated[list[Annotated[str, Field(max_length=32)]], Field(max_length=20)] | None
    ) = Field(
        default=None,
        description="Monitors of the same project this one depends on (no cycles). While "
        "one of them is down, this monitor's failures open no incident and send no alert "
        "of their own: they are listed under that monitor's incident. `[]` removes them",
    )
    escalationPolicyId: Annotated[str, Field(max_length=32)] | None = Field(
        default=None,
        description="An escalation policy of the same project: it decides who is paged, step "
        "by step; none (or null on update): every provider of the project at once",
    )
    key: DeclaredKey | None = Field(default=None, description="null on update removes it")
    secretRefs: SecretRefsIn | None = None
    successThreshold: Annotated[int, Field(ge=1, le=20)] | None = Field(
        default=None,
        description="Successful checks in a row before a down monitor is up again (default 1)",
    )
    alertOnDegraded: Annotated[int, Field(ge=1, le=100)] | None = Field(
        default=None,
        description="A degraded status held for this many checks opens a low-severity "
        "incident and alerts like down; null: degraded never alerts",
    )
    baselineFactor: Annotated[float, Field(ge=1.1, le=100)] | None = Field(
        default=None,
        description="Degraded when the last hour's p95 response time is above this many times "
        "the monitor's own 7-day p95 (from its stored histograms); null: off",
    )
    baselineMinSamples: Annotated[int, Field(ge=10, le=100_000)] | None = Field(
        default=None,
        description="Checks the last hour and the 7 days must each have before the baseline "
        "rule judges (default 30)",
    )
    certificateWarningDays: (
        Annotated[list[Annotated[int, Field(ge=1, le=365)]], Field(max_length=5)] | None
    ) = Field(
        default=None,
        description="Types that read a certificate: a warning incident opens as the days left "
        "cross each of these (default 14, 7, 1), and resolves once it is renewed",
    )


# ---- the types' own fields, from their declarations (probes/registry.py) -------------------


# A field types declare differently (``url``: http(s) for one, ws(s) for another; ``tls``: a
# mode for mail, on or off for gRPC) takes any of its declarations here; each type's own model
# checks it (``MonitorService``) and its create body says exactly which.
def _either(declared: list[FieldInfo]) -> FieldInfo:
    kinds: list[Any] = []
    for info in declared:
        if not any(_same_annotation(info, other) for other in declared[: declared.index(info)]):
            kinds.append(_bounded(info))
    either: Any = Union[tuple(kinds)]  # noqa: UP007
    return FieldInfo(
        annotation=either,
        default=None,
        description="What it holds depends on `type`: see the type's create body",
    )


def _schema(info: FieldInfo) -> Any:
    return TypeAdapter(_bounded(info)).json_schema()


def _same_annotation(one: FieldInfo, other: FieldInfo) -> bool:
    """Declared alike (the same JSON schema), whether or not either takes ``None``."""
    return bool(_schema(one) == _schema(other))


def _declared_fields() -> dict[str, FieldInfo]:
    """Each type's config fields once; a field several types share (``host``) is the first
    declaration's when they all declare it alike."""
    declared: dict[str, list[FieldInfo]] = {}
    for kind in KINDS.values():
        for name, info in kind.config.model_fields.items():
            declared.setdefault(name, []).append(info)
    return {
        name: infos[0] if all(_same_annotation(infos[0], i) for i in infos) else _either(infos)
        for name, infos in declared.items()
    }


def _bounded(info: FieldInfo) -> Any:
    """The field's type, its bounds included, without ``None``."""
    annotation: Any = info.annotation
    if accepts_none(annotation):
        kept = tuple(a for a in get_args(annotation) if a is not NoneType)
        annotation = kept[0] if len(kept) == 1 else Union[kept]  # noqa: UP007
    return Annotated[(annotation, *info.metadata)] if info.metadata else annotation


TYPE_FIELDS = _declared_fields()
# Type fields no column of the monitor holds: kept in its `settings`, by API name.
SETTING_FIELDS = tuple(
    name for name in TYPE_FIELDS if to_snake(name) not in Monitor.__table__.columns
)
SECRET_SETTINGS = frozenset(name for kind in KINDS.values() for name in kind.secrets)


def _described(info: FieldInfo, **given: Any) -> Any:
    return Field(description=info.description, examples=info.examples, **given)


def _null_refused_on_update(name: str) -> bool:
    """No type that has the field lets an update clear it (``method``, ``headers``)."""
    having = [kind for kind in KINDS.values() if name in kind.config.model_fields]
    return not any(kind.nullable(name) for kind in having)


if TYPE_CHECKING:

    class MonitorFields(_CommonFields):
        # The types' fields are made at run time: to the type checker they are Any.
        def __getattr__(self, name: str) -> Any: ...

else:
    # On create any type's field may be sent (null or left out: the type's default).
    MonitorFields = create_model(
        "MonitorFields",
        __base__=_CommonFields,
        __doc__="Fields shared by create and update; which are required depends on ``type``.",
        **{
            name: (_bounded(info) | None, _described(info, default=None))
            for name, info in TYPE_FIELDS.items()
        },
    )


class _NewMonitor(MonitorFields):
    projectId: Annotated[str, Field(max_length=32)]
    name: Name

    def columns(self, exclude: set[str]) -> dict[str, Any]:
        """The fields as the monitor's columns (its type's own settings in ``settings``); one
        left out or null takes its type's default, else is left out for the column's own."""
        kind = KINDS[self.type]
        defaults = kind.defaults
        values = self.model_dump(exclude=exclude)
        stored = {name: defaults.get(name) if v is None else v for name, v in values.items()}
        settings = {
            name: stored.pop(name)
            for name in SETTING_FIELDS
            if name in stored and name in kind.config.model_fields
        }
        columns = {to_snake(name): value for name, value in stored.items() if value is not None}
        columns["settings"] = {name: v for name, v in settings.items() if v is not None}
        return columns


def _create_model(kind_name: str) -> type[_NewMonitor]:
    """The create body of one type, so the schema itself says which fields it needs."""
    kind = KINDS[kind_name]
    targets = {
        name: (_bounded(kind.config.model_fields[name]), _described(TYPE_FIELDS[name]))
        for name in kind.targets
    }
    made: type[_NewMonitor] = create_model(  # type: ignore[call-overload]
        f"{kind.title}MonitorCreate",
        __base__=_NewMonitor,
        type=(Literal[kind.name], ...),
        **targets,
    )
    return made


MONITOR_CREATES = tuple(_create_model(name) for name in KINDS)
if TYPE_CHECKING:
    NewMonitor = _NewMonitor
else:
    NewMonitor = Union[MONITOR_CREATES]  # noqa: UP007
MonitorCreate = Annotated[NewMonitor, TagInWords("type")]


class _MonitorOut(RowOut):
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
    success_threshold: int
    alert_on_degraded: int | None
    baseline_factor: float | None
    baseline_min_samples: int | None
    certificate_warning_days: list[int] | None
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
        kind = KINDS.get(row.type)
        settings = secrets.masked_settings(row.settings or {}, SECRET_SETTINGS)
        return {
            "headers": secrets.masked(
                {str(k): str(v) for k, v in (row.headers or {}).items()}, row.secret_headers or []
            ),
            "url": (
                secrets.mask_url_password(row.url)
                if kind is not None and kind.url_password_secret
                else row.url
            ),
            "heartbeat_url": f"{context['public_url']}/heartbeat/{token}" if token else None,
            "secret_refs": shown_refs(row.secret_refs),
            **{to_snake(name): settings.get(name) for name in SETTING_FIELDS},
        }


if TYPE_CHECKING:
    MonitorOut = _MonitorOut
else:
    # The types' own settings, each a field of its own (null where the type has none).
    MonitorOut = create_model(
        "MonitorOut",
        __base__=_MonitorOut,
        __doc__=_MonitorOut.__doc__,
        **{
            to_snake(name): (
                (str if name in SECRET_SETTINGS else _bounded(TYPE_FIELDS[name])) | None,
                _described(TYPE_FIELDS[name], default=None),
            )
            for name in SETTING_FIELDS
        },
    )


class _UpdateFields(MonitorFields):
    resource = MonitorOut

    name: Omittable[Name] = None
    intervalSeconds: Omittable[Interval] = None
    timeoutSeconds: Omittable[Timeout] = None
    retries: Omittable[Retries] = None
    successThreshold: Omittable[Annotated[int, Field(ge=1, le=20)]] = Field(
        default=None,
        description="Successful checks in a row before a down monitor is up again (default 1)",
    )


_UPDATE_DOC = """Fields left out stay as they are. `null` clears `keyword`, `body`, `expectedValue`,
`degradedThresholdMs`, `quorum`, `escalationPolicyId`, `schedule`, `timezone`,
`graceSeconds`, `alertOnDegraded`, `baselineFactor`, `baselineMinSamples` and
`certificateWarningDays` (their defaults apply), restores the default `recordType` (A), TLS
`port` (443) and any other setting of the type that has a default, and leaves `regionIds`,
`assertions`, `dependsOn` and `isActive` unchanged. A secret setting sent back masked keeps
its stored value, except when the monitor's target changes in the same request (422).
The target a monitor's type checks may not be null: `url` of an http monitor, `host` and
`port` of a tcp monitor, `host` of a dns or tls monitor (422)."""

if TYPE_CHECKING:
    MonitorUpdate = _UpdateFields
else:
    MonitorUpdate = create_model(
        "MonitorUpdate",
        __base__=_UpdateFields,
        __doc__=_UPDATE_DOC,
        **{
            name: (Omittable[_bounded(info)], _described(info, default=None))
            for name, info in TYPE_FIELDS.items()
            if _null_refused_on_update(name) and name not in SETTING_FIELDS
        },
    )


class CheckTimingsOut(RowOut):
    """Milliseconds per phase of the check; null when the phase did not happen (no TLS on
    plain HTTP, no DNS for an address) or was not measured."""

    dns_ms: float | None
    connect_ms: float | None
    tls_ms: float | None
    first_byte_ms: float | None
    total_ms: float | None


class CheckResultOut(RowOut):
    id: str = Field(description="the result's key: monitor and region numbers and the time")
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
    evidence: dict[str, Any] | None = Field(
        default=None,
        description="What a failed check saw, bounded and redacted (docs/failure-evidence.md); "
        "null when it passed",
    )
    certificate_days: int | None = Field(
        default=None,
        description="whole days the target's certificate had left (negative once expired), "
        "where the check saw one (https, TLS and the other types that read a certificate)",
    )


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
