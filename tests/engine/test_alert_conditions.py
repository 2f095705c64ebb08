"""Alert conditions in the pure status machine (recovery threshold, degraded incidents, the
baseline verdict) and the pure baseline rule: properties first, then plain examples."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.engine.test_status_machine import (
    FAST,
    UP_STATES,
    Scenario,
    monitor_settings,
    result_sequences,
    run,
)
from upwatch.engine.baseline import Window, baseline_verdict
from upwatch.engine.status import (
    IncidentAction,
    MonitorState,
    MonitorStatus,
    Result,
    Settings,
    apply,
    decode_state,
    encode_state,
    paused,
    resumed,
    settings_of,
)


@st.composite
def threshold_scenarios(draw: st.DrawFn) -> Scenario:
    config = replace(
        draw(monitor_settings()),
        success_threshold=draw(st.integers(min_value=1, max_value=5)),
        alert_on_degraded=draw(st.none() | st.integers(min_value=1, max_value=5)),
    )
    return Scenario(config=config, results=draw(result_sequences(config)))


def success_streaks(results: Sequence[Result]) -> dict[str, int]:
    """Trailing run of successes per region, from the history alone."""
    streaks: dict[str, int] = {}
    for result in results:
        streaks[result.region_id] = streaks.get(result.region_id, 0) + 1 if result.ok else 0
    return streaks


# --- successThreshold -------------------------------------------------------------------------


@FAST
@given(threshold_scenarios())
def test_a_down_monitor_is_never_up_before_a_region_succeeded_the_threshold_times_in_a_row(
    scenario: Scenario,
) -> None:
    needed = scenario.config.success_threshold
    for seen, transition in enumerate(run(scenario.config, scenario.results), start=1):
        if transition.previous_status is MonitorStatus.DOWN and (
            transition.state.status in UP_STATES
        ):
            streaks = success_streaks(scenario.results[:seen])
            assert max(streaks.values()) >= needed


@FAST
@given(threshold_scenarios())
def test_a_threshold_of_one_is_the_plain_rule(scenario: Scenario) -> None:
    plain = replace(scenario.config, success_threshold=1, alert_on_degraded=None)
    default = Settings(
        retries=plain.retries,
        degraded_threshold_ms=plain.degraded_threshold_ms,
        region_ids=plain.region_ids,
        quorum=plain.quorum,
    )
    assert run(plain, scenario.results) == run(default, scenario.results)


@FAST
@given(threshold_scenarios())
def test_the_threshold_changes_nothing_until_the_first_outage(scenario: Scenario) -> None:
    plain = replace(scenario.config, success_threshold=1)
    gated = run(scenario.config, scenario.results)
    for with_threshold, without in zip(gated, run(plain, scenario.results), strict=True):
        if with_threshold.previous_status is MonitorStatus.DOWN:
            break
        assert with_threshold.state.status is without.state.status


@FAST
@given(threshold_scenarios())
def test_enough_successes_in_a_row_in_one_region_end_an_outage_once_the_quorum_breaks(
    scenario: Scenario,
) -> None:
    config = replace(scenario.config, alert_on_degraded=None)
    transitions = run(config, scenario.results)
    state = transitions[-1].state if transitions else MonitorState()
    if state.status is not MonitorStatus.DOWN:
        return
    region = config.region_ids[0]
    recovery = [Result(region, True, 1.0)] * config.success_threshold
    after = run(config, recovery, state)
    still_down = sum(
        1
        for r, s in after[-1].state.regions.items()
        if r in config.region_ids and s.consecutive_failures >= config.retries + 1
    )
    quorum = config.quorum or len(config.region_ids) // 2 + 1
    if still_down < quorum:
        assert after[-1].state.status in UP_STATES


# --- alertOnDegraded --------------------------------------------------------------------------


@FAST
@given(threshold_scenarios())
def test_incident_actions_never_leave_two_incidents_open(scenario: Scenario) -> None:
    open_now, degraded = False, False
    for transition in run(scenario.config, scenario.results):
        action = transition.incident
        if action in (IncidentAction.OPEN, IncidentAction.OPEN_DEGRADED):
            assert not open_now
        if action is IncidentAction.RESOLVE:
            assert open_now
        if action is IncidentAction.ESCALATE:
            assert open_now
            assert degraded
        if action is not IncidentAction.NONE:
            open_now = action is not IncidentAction.RESOLVE
            degraded = action is IncidentAction.OPEN_DEGRADED
        assert transition.state.open_incident == open_now
        assert transition.state.incident_degraded == degraded


@FAST
@given(threshold_scenarios())
def test_a_degraded_incident_opens_only_after_n_degraded_results_in_a_row(
    scenario: Scenario,
) -> None:
    statuses: list[MonitorStatus] = []
    for transition in run(scenario.config, scenario.results):
        statuses.append(transition.state.status)
        if transition.incident is IncidentAction.OPEN_DEGRADED:
            needed = scenario.config.alert_on_degraded
            assert needed is not None
            assert statuses[-needed:] == [MonitorStatus.DEGRADED] * needed


@FAST
@given(threshold_scenarios())
def test_a_monitor_degraded_n_times_in_a_row_has_an_incident_open(scenario: Scenario) -> None:
    needed = scenario.config.alert_on_degraded
    streak = 0
    for transition in run(scenario.config, scenario.results):
        degraded = transition.state.status is MonitorStatus.DEGRADED
        streak = streak + 1 if degraded else 0
        # One result later at most: the one that ends an outage resolves it first.
        if needed is not None and streak >= needed + 1:
            assert transition.state.open_incident


@FAST
@given(threshold_scenarios())
def test_without_alert_on_degraded_a_degraded_monitor_never_opens_an_incident(
    scenario: Scenario,
) -> None:
    config = replace(scenario.config, alert_on_degraded=None)
    for transition in run(config, scenario.results):
        assert transition.incident not in (
            IncidentAction.OPEN_DEGRADED,
            IncidentAction.ESCALATE,
        )


SLOW = Settings(
    retries=0,
    degraded_threshold_ms=500.0,
    region_ids=("eu-west",),
    alert_on_degraded=2,
    success_threshold=3,
)


def ok(ms: float = 100.0) -> Result:
    return Result("eu-west", True, ms)


def failed() -> Result:
    return Result("eu-west", False, None)


def test_a_slow_monitor_opens_a_degraded_incident_on_its_second_slow_check() -> None:
    actions = [t.incident for t in run(SLOW, [ok(), ok(900), ok(900), ok(900), ok()])]
    assert actions == [
        IncidentAction.NONE,
        IncidentAction.NONE,
        IncidentAction.OPEN_DEGRADED,
        IncidentAction.NONE,
        IncidentAction.RESOLVE,
    ]


def test_a_degraded_monitor_that_turns_down_escalates_its_incident() -> None:
    transitions = run(SLOW, [ok(900), ok(900), failed(), failed(), ok(), ok(), ok()])
    assert [t.incident for t in transitions] == [
        IncidentAction.NONE,
        IncidentAction.OPEN_DEGRADED,
        IncidentAction.ESCALATE,
        IncidentAction.NONE,
        IncidentAction.NONE,
        IncidentAction.NONE,
        IncidentAction.RESOLVE,
    ]
    assert [t.state.status for t in transitions][-3:] == [
        MonitorStatus.DOWN,
        MonitorStatus.DOWN,
        MonitorStatus.UP,
    ]


def test_an_outage_ending_slow_resolves_first_and_the_degraded_incident_follows() -> None:
    config = replace(SLOW, success_threshold=1, alert_on_degraded=1)
    transitions = run(config, [failed(), ok(900), ok(900)])
    assert [t.incident for t in transitions] == [
        IncidentAction.OPEN,
        IncidentAction.RESOLVE,
        IncidentAction.OPEN_DEGRADED,
    ]


def test_a_late_failure_within_the_retries_keeps_a_degraded_streak() -> None:
    config = replace(SLOW, retries=1, alert_on_degraded=3)
    transitions = run(config, [ok(900), failed(), ok(900)])
    assert [t.state.degraded_streak for t in transitions] == [1, 2, 3]
    assert transitions[-1].incident is IncidentAction.OPEN_DEGRADED


# --- the baseline verdict in the machine ------------------------------------------------------


def test_a_slow_verdict_makes_an_up_monitor_degraded_when_the_rule_is_on() -> None:
    config = replace(SLOW, degraded_threshold_ms=None, baseline_rule=True)
    state = MonitorState(slow_reason="p95 of the last hour (900 ms) is above 2 x ...")
    assert apply(state, ok(), config).state.status is MonitorStatus.DEGRADED
    assert apply(state, ok(), config).state.slow_reason == state.slow_reason
    off = replace(config, baseline_rule=False)
    assert apply(state, ok(), off).state.status is MonitorStatus.UP


def test_a_slow_verdict_does_not_hide_an_outage() -> None:
    config = replace(SLOW, degraded_threshold_ms=None, baseline_rule=True)
    state = MonitorState(slow_reason="slow")
    assert apply(state, failed(), config).state.status is MonitorStatus.DOWN


# --- the stored state -------------------------------------------------------------------------


def stored(state: dict[str, Any] | None, status: str = "up", **columns: Any) -> SimpleNamespace:
    values: dict[str, Any] = {
        "status": status,
        "state": state,
        "retries": 0,
        "degraded_threshold_ms": None,
        "quorum": None,
        "region_ids": ["eu-west"],
        "success_threshold": 1,
        "alert_on_degraded": None,
        "baseline_factor": None,
    }
    return SimpleNamespace(**(values | columns))


@FAST
@given(threshold_scenarios())
def test_the_state_survives_encoding_and_decoding(scenario: Scenario) -> None:
    for transition in run(scenario.config, scenario.results):
        state = replace(transition.state, slow_reason="slow")
        again = decode_state(stored(encode_state(state), state.status.value))  # type: ignore[arg-type]
        assert again == state


def test_a_state_stored_before_alert_conditions_decodes_with_its_latest_success_counted() -> None:
    old = {"regions": {"eu-west": {"f": 0, "ok": True, "ms": 80.0, "at": None}}, "incident": True}
    state = decode_state(stored(old, "down"))  # type: ignore[arg-type]
    assert state.regions["eu-west"].consecutive_successes == 1
    assert state.open_incident
    assert not state.incident_degraded
    assert state.degraded_streak == 0
    assert state.slow_reason is None


def test_the_monitor_row_gives_the_machine_its_alert_conditions() -> None:
    row = stored(None, success_threshold=3, alert_on_degraded=2, baseline_factor=2.5)
    config = settings_of(row, ("eu-west",))  # type: ignore[arg-type]
    assert (config.success_threshold, config.alert_on_degraded, config.baseline_rule) == (
        3,
        2,
        True,
    )


def test_resuming_keeps_the_degraded_incident_and_the_verdict() -> None:
    state = MonitorState(
        status=MonitorStatus.DEGRADED,
        open_incident=True,
        incident_degraded=True,
        degraded_streak=4,
        slow_reason="slow",
    )
    again = resumed(paused(state))
    assert again.incident_degraded
    assert again.slow_reason == "slow"
    assert again.degraded_streak == 0


# --- the baseline rule ------------------------------------------------------------------------

samples = st.integers(min_value=0, max_value=10_000)
p95s = st.none() | st.floats(min_value=0, max_value=600_000, allow_nan=False)
factors = st.none() | st.floats(min_value=-1, max_value=20, allow_nan=False)


@FAST
@given(p95s, samples, p95s, samples, factors, st.none() | st.integers(0, 500))
def test_a_verdict_is_reached_exactly_when_both_windows_are_full_and_the_hour_is_slow(
    hour_p95: float | None,
    hour_n: int,
    week_p95: float | None,
    week_n: int,
    factor: float | None,
    min_samples: int | None,
) -> None:
    verdict = baseline_verdict(
        Window(hour_p95, hour_n), Window(week_p95, week_n), factor, min_samples
    )
    needed = max(30 if min_samples is None else min_samples, 1)
    expected = (
        factor is not None
        and factor > 0
        and hour_n >= needed
        and week_n >= needed
        and hour_p95 is not None
        and week_p95 is not None
        and hour_p95 > factor * week_p95
    )
    assert (verdict is not None) == expected


@FAST
@given(
    st.floats(min_value=0, max_value=10_000),
    st.floats(min_value=0, max_value=10_000),
    st.floats(min_value=0, max_value=10_000),
    st.floats(min_value=0.1, max_value=10),
)
def test_a_slower_hour_is_never_less_slow(hour: float, more: float, week: float, k: float) -> None:
    week_window = Window(week, 100)
    if baseline_verdict(Window(hour, 100), week_window, k) is not None:
        assert baseline_verdict(Window(hour + more, 100), week_window, k) is not None


def test_the_verdict_says_why() -> None:
    verdict = baseline_verdict(Window(900.0, 60), Window(200.0, 5000), 3.0)
    assert verdict == "p95 of the last hour (900 ms) is above 3 x the 7-day p95 (200 ms)"


def test_too_few_samples_give_no_verdict_whatever_the_times() -> None:
    assert baseline_verdict(Window(9000.0, 29), Window(10.0, 5000), 2.0) is None
    assert baseline_verdict(Window(9000.0, 60), Window(10.0, 29), 2.0) is None
    assert baseline_verdict(Window(9000.0, 5), Window(10.0, 5), 2.0, min_samples=5) is not None
