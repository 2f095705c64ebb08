"""The pure status machine: (previous state, new result, monitor settings) -> transition.

No I/O, no clock, no mutation: ``apply`` is the only thing that changes a monitor's state, and
it returns a new ``MonitorState`` together with the incident action the caller must carry out.

Rules, for the regions listed in ``Settings.region_ids`` (results from other regions are ignored
and change nothing):

- **Region verdicts.** With ``n = retries + 1``, a region is *down* when its last ``n`` or more
  results in a row failed, *up* when its latest result succeeded, and *undecided* otherwise
  (never checked, or failing fewer than ``n`` times in a row). A result only changes the memory of
  its own region.
- **Recovery** (``success_threshold``, ``s``). While the monitor is DOWN, a region counts as up
  only once its last ``s`` or more results in a row succeeded; counted per region like the
  retries, so recovering is the mirror of failing: the quorum decides an outage, one region that
  is steadily up again ends it. ``s = 1`` is the plain rule above.
- **Late results.** A result of a check due before the last one applied for its region (a
  check that was slow to arrive, or a scheduled check overtaken by a "check now") changes
  nothing: what a newer check showed is never undone by an older one. Checks are ordered by
  when they were due, a time the scheduler sets, so a worker's clock does not decide it.
- **Quorum.** ``quorum`` regions must agree; ``None`` means a majority of the monitor's distinct
  regions (``len // 2 + 1``). An explicit quorum is clamped to ``1 .. len(regions)`` so that an
  outage can always be declared.
- **DOWN** when at least ``quorum`` regions are down.
- **UP** when not down and at least one region is up. It is **DEGRADED** instead when
  ``degraded_threshold_ms`` is set and more than half of the up regions that reported a response
  time were slow (``slower_than``: strictly above the threshold), or when the baseline rule is on
  (``Settings.baseline_rule``) and the state holds a slow verdict (``MonitorState.slow_reason``,
  written by ``engine/baseline.py`` once a minute, read here from the next check on). Judging
  the up regions together, rather than only the region of the latest result, keeps a monitor
  from flapping between UP and DEGRADED when one far-away region is slow and the others are not.
- **Otherwise** (no region up, fewer than ``quorum`` down) the evidence is inconclusive and the
  status is kept: a failure within the retries does not flip an UP monitor, a new monitor stays
  PENDING until it has a success or a confirmed outage, and a DOWN monitor stays DOWN until a
  success (which can only differ from the rules above after the settings were changed).
- **Inconclusive results** (a check that could not tell, e.g. a domain registry that did not
  answer) change nothing but the region's last due time: neither a success nor a failure.
- **PENDING** is the initial status (no result yet). **PAUSED** is set by callers with
  ``paused``; ``apply`` on a paused state returns it unchanged with no incident action.
  ``resumed`` brings it back to PENDING with the region memory cleared.

Incident actions, one per result at most, and never two incidents open:

- OPEN when the new status is DOWN and no automatic incident is open (never two for one outage);
- ESCALATE when it is DOWN while the open incident is a degraded one: that incident becomes the
  outage's (high severity, alerts as for an outage), rather than a resolve and an open;
- RESOLVE when the new status is UP while one is open, or DEGRADED while an outage's is open
  (this also resolves an incident left open across a pause);
- OPEN_DEGRADED (``alert_on_degraded``, ``N``) when no incident is open and the status has been
  DEGRADED for the last ``N`` applied results in a row (``degraded_streak``, reset by any other
  status). The result that ends an outage as DEGRADED resolves it and counts towards the streak;
  with ``N = 1`` the degraded incident therefore opens on the next degraded result;
- NONE otherwise. ``open_incident`` and ``incident_degraded`` in the new state reflect it.

The rest of the module is the monitor row's side of the machine, also pure: ``decode_state`` and
``encode_state`` (the state as stored in ``monitors.state``), ``settings_of``, ``result_status``
(what one stored result says) and ``region_status`` (what one region shows), which use the same
``slower_than`` rule as the machine so no screen re-derives "degraded" its own way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol


class MonitorStatus(StrEnum):
    UP = "up"
    DOWN = "down"
    DEGRADED = "degraded"
    PAUSED = "paused"
    PENDING = "pending"


@dataclass(frozen=True, slots=True)
class RegionState:
    """What the machine remembers about one region of a monitor."""

    consecutive_failures: int = 0
    consecutive_successes: int = 0
    last_ok: bool | None = None  # None: never checked in that region
    last_response_ms: float | None = None  # of the latest result, successful or not
    last_due_at: float | None = None  # epoch seconds the latest applied check was due


@dataclass(frozen=True, slots=True)
class MonitorState:
    status: MonitorStatus = MonitorStatus.PENDING
    regions: Mapping[str, RegionState] = field(default_factory=dict)  # region id -> state
    open_incident: bool = False  # an automatic incident is open for this monitor
    incident_degraded: bool = False  # that incident is a degraded one, not an outage's
    degraded_streak: int = 0  # applied results in a row whose new status was DEGRADED
    # The baseline rule's verdict (why the monitor is slow), or None; not changed by ``apply``.
    slow_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    retries: int  # down only after retries + 1 consecutive failures (per region)
    degraded_threshold_ms: float | None  # up but slower than this -> degraded
    region_ids: tuple[str, ...]  # the monitor's regions (all that check it)
    quorum: int | None = None  # regions that must agree; None = majority of region_ids
    success_threshold: int = 1  # a DOWN monitor's region is up after this many successes in a row
    alert_on_degraded: int | None = None  # DEGRADED results in a row that open an incident
    baseline_rule: bool = False  # a slow verdict in the state makes an up monitor DEGRADED


@dataclass(frozen=True, slots=True)
class Result:
    """One check result."""

    region_id: str
    ok: bool
    response_time_ms: float | None
    due_at: float | None = None  # epoch seconds the check was due; None: taken as the newest
    inconclusive: bool = False  # the check could not tell: neither a success nor a failure


class IncidentAction(StrEnum):
    NONE = "none"
    OPEN = "open"
    RESOLVE = "resolve"
    OPEN_DEGRADED = "open_degraded"  # a low-severity incident: degraded for N checks
    ESCALATE = "escalate"  # the open degraded incident becomes the outage's


@dataclass(frozen=True, slots=True)
class Transition:
    state: MonitorState  # the new state
    previous_status: MonitorStatus
    incident: IncidentAction

    @property
    def changed(self) -> bool:
        return self.state.status != self.previous_status


def required_failures(settings: Settings) -> int:
    """Consecutive failures after which a region's verdict is down."""
    return max(settings.retries, 0) + 1


def required_successes(settings: Settings) -> int:
    """Consecutive successes after which a region of a DOWN monitor counts as up."""
    return max(settings.success_threshold, 1)


def effective_quorum(settings: Settings) -> int:
    """How many regions must hold a down verdict for the monitor to be DOWN."""
    regions = len(set(settings.region_ids))
    if settings.quorum is None:
        return regions // 2 + 1
    return min(max(settings.quorum, 1), max(regions, 1))


def apply(state: MonitorState, result: Result, settings: Settings) -> Transition:
    """The transition caused by one check result."""
    if state.status is MonitorStatus.PAUSED or result.region_id not in settings.region_ids:
        return Transition(state=state, previous_status=state.status, incident=IncidentAction.NONE)

    before = state.regions.get(result.region_id, RegionState())
    if _late(result, before):
        return Transition(state=state, previous_status=state.status, incident=IncidentAction.NONE)
    if result.inconclusive:
        # Only its due time is remembered, so an older result arriving later stays late.
        due = result.due_at if result.due_at is not None else before.last_due_at
        regions = {**state.regions, result.region_id: replace(before, last_due_at=due)}
        return Transition(
            state=replace(state, regions=regions),
            previous_status=state.status,
            incident=IncidentAction.NONE,
        )
    region = RegionState(
        consecutive_failures=0 if result.ok else before.consecutive_failures + 1,
        consecutive_successes=before.consecutive_successes + 1 if result.ok else 0,
        last_ok=result.ok,
        last_response_ms=result.response_time_ms,
        last_due_at=result.due_at if result.due_at is not None else before.last_due_at,
    )
    # A fresh mapping: the caller's state is never touched.
    regions = {**state.regions, result.region_id: region}
    status = _status(state, regions, settings)
    streak = state.degraded_streak + 1 if status is MonitorStatus.DEGRADED else 0
    incident = _incident(status, state, streak, settings)
    if incident is IncidentAction.NONE:
        open_incident, degraded = state.open_incident, state.incident_degraded
    else:
        open_incident = incident is not IncidentAction.RESOLVE
        degraded = incident is IncidentAction.OPEN_DEGRADED
    new_state = MonitorState(
        status=status,
        regions=regions,
        open_incident=open_incident,
        incident_degraded=degraded,
        degraded_streak=streak,
        slow_reason=state.slow_reason,
    )
    return Transition(state=new_state, previous_status=state.status, incident=incident)


def _late(result: Result, before: RegionState) -> bool:
    return (
        result.due_at is not None
        and before.last_due_at is not None
        and result.due_at < before.last_due_at
    )


def without_future(state: MonitorState, now: float) -> MonitorState:
    """The state with every remembered due time later than ``now`` forgotten: after the
    clock stepped back, a time still ahead of it would make every new result look late."""
    if all(r.last_due_at is None or r.last_due_at <= now for r in state.regions.values()):
        return state
    regions = {
        region: r if r.last_due_at is None or r.last_due_at <= now else replace(r, last_due_at=None)
        for region, r in state.regions.items()
    }
    return replace(state, regions=regions)


def paused(state: MonitorState) -> MonitorState:
    """The state of a monitor its owner paused; region memory and open incident are kept."""
    return replace(state, status=MonitorStatus.PAUSED)


def resumed(state: MonitorState) -> MonitorState:
    """A paused monitor starting over: PENDING, no region memory, open incident (and the
    baseline verdict) kept.

    Resuming a monitor that is not paused changes nothing, so it keeps its status.
    """
    if state.status is not MonitorStatus.PAUSED:
        return state
    return MonitorState(
        status=MonitorStatus.PENDING,
        regions={},
        open_incident=state.open_incident,
        incident_degraded=state.incident_degraded,
        slow_reason=state.slow_reason,
    )


def _status(
    state: MonitorState, regions: Mapping[str, RegionState], settings: Settings
) -> MonitorStatus:
    previous = state.status
    needed = required_failures(settings)
    # Distinct ids: a region listed twice must not count twice towards the quorum.
    own = [regions[r] for r in dict.fromkeys(settings.region_ids) if r in regions]
    down = sum(1 for r in own if r.consecutive_failures >= needed)
    if down >= effective_quorum(settings):
        return MonitorStatus.DOWN
    # Leaving an outage takes ``success_threshold`` successes in a row in a region.
    needed_ok = required_successes(settings) if previous is MonitorStatus.DOWN else 1
    up = [r for r in own if r.last_ok is True and r.consecutive_successes >= needed_ok]
    if not up:
        return previous
    if _slow(up, settings.degraded_threshold_ms):
        return MonitorStatus.DEGRADED
    if settings.baseline_rule and state.slow_reason is not None:
        return MonitorStatus.DEGRADED
    return MonitorStatus.UP


def slower_than(response_ms: float | None, threshold_ms: float | None) -> bool:
    """The one "slow" rule: a measured time strictly above a set threshold."""
    return threshold_ms is not None and response_ms is not None and response_ms > threshold_ms


def _slow(up: list[RegionState], threshold_ms: float | None) -> bool:
    if threshold_ms is None:
        return False
    timed = [r.last_response_ms for r in up if r.last_response_ms is not None]
    slow = sum(1 for ms in timed if slower_than(ms, threshold_ms))
    return 2 * slow > len(timed)


def _incident(
    status: MonitorStatus, before: MonitorState, streak: int, settings: Settings
) -> IncidentAction:
    if status is MonitorStatus.DOWN:
        if not before.open_incident:
            return IncidentAction.OPEN
        return IncidentAction.ESCALATE if before.incident_degraded else IncidentAction.NONE
    if status is MonitorStatus.UP and before.open_incident:
        return IncidentAction.RESOLVE
    if status is MonitorStatus.DEGRADED:
        if before.open_incident:
            return IncidentAction.NONE if before.incident_degraded else IncidentAction.RESOLVE
        if settings.alert_on_degraded is not None and streak >= max(settings.alert_on_degraded, 1):
            return IncidentAction.OPEN_DEGRADED
    return IncidentAction.NONE


def region_status(region: RegionState | None, settings: Settings) -> str:
    """What one region shows: pending (never checked), down (its verdict), degraded (up and
    slow), or up. A region failing within its retries shows up: its outage is not confirmed."""
    if region is None or region.last_ok is None:
        return "pending"
    if region.consecutive_failures >= required_failures(settings):
        return "down"
    if region.last_ok and slower_than(region.last_response_ms, settings.degraded_threshold_ms):
        return "degraded"
    return "up"


def result_status(ok: bool, response_ms: float | None, threshold_ms: float | None) -> str:
    """What one stored result says: down, degraded (up and slow) or up."""
    if not ok:
        return "down"
    return "degraded" if slower_than(response_ms, threshold_ms) else "up"


# The state as stored on the monitor row (``monitors.state``), with short keys: it is
# rewritten by every result.


class StoredMonitor(Protocol):
    """What the rules read of a monitor: the model's row, or the ingester's plain copy."""

    @property
    def status(self) -> str: ...
    @property
    def state(self) -> Mapping[str, Any] | None: ...
    @property
    def retries(self) -> int: ...
    @property
    def degraded_threshold_ms(self) -> float | None: ...
    @property
    def quorum(self) -> int | None: ...
    @property
    def region_ids(self) -> Sequence[str] | None: ...
    @property
    def success_threshold(self) -> int: ...
    @property
    def alert_on_degraded(self) -> int | None: ...
    @property
    def baseline_factor(self) -> float | None: ...


def decode_state(monitor: StoredMonitor) -> MonitorState:
    data = monitor.state or {}
    regions = {
        region: RegionState(
            consecutive_failures=int(r.get("f", 0)),
            # Stored before successes were counted: the latest success is one in a row.
            consecutive_successes=int(r.get("s", 1 if r.get("ok") is True else 0)),
            last_ok=r.get("ok"),
            last_response_ms=r.get("ms"),
            last_due_at=r.get("at"),
        )
        for region, r in (data.get("regions") or {}).items()
    }
    try:
        status = MonitorStatus(monitor.status)
    except ValueError:
        status = MonitorStatus.PENDING
    slow = data.get("baseline")
    return MonitorState(
        status=status,
        regions=regions,
        open_incident=bool(data.get("incident")),
        incident_degraded=bool(data.get("incident_degraded")),
        degraded_streak=int(data.get("degraded", 0)),
        slow_reason=slow if isinstance(slow, str) else None,
    )


def encode_state(state: MonitorState) -> dict[str, Any]:
    return {
        "regions": {
            region: {
                "f": r.consecutive_failures,
                "s": r.consecutive_successes,
                "ok": r.last_ok,
                "ms": r.last_response_ms,
                "at": r.last_due_at,
            }
            for region, r in state.regions.items()
        },
        "incident": state.open_incident,
        "incident_degraded": state.incident_degraded,
        "degraded": state.degraded_streak,
        "baseline": state.slow_reason,
    }


def settings_of(monitor: StoredMonitor, all_regions: Sequence[str]) -> Settings:
    return Settings(
        retries=monitor.retries,
        degraded_threshold_ms=monitor.degraded_threshold_ms,
        region_ids=tuple(monitor.region_ids or all_regions),
        quorum=monitor.quorum,
        success_threshold=monitor.success_threshold,
        alert_on_degraded=monitor.alert_on_degraded,
        baseline_rule=monitor.baseline_factor is not None,
    )
