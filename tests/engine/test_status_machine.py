"""The pure status machine: properties over random result sequences, then plain examples."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from upwatch.engine.status import (
    IncidentAction,
    MonitorState,
    MonitorStatus,
    RegionState,
    Result,
    Settings,
    Transition,
    apply,
    paused,
    resumed,
    without_future,
)

REGION_POOL = ("eu-west", "us-east", "ap-south", "sa-east", "af-south")
FAST = settings(max_examples=300, deadline=None)

response_times = st.none() | st.floats(min_value=0, max_value=5_000, allow_nan=False)


@st.composite
def monitor_settings(draw: st.DrawFn) -> Settings:
    size = draw(st.integers(min_value=1, max_value=5))
    return Settings(
        retries=draw(st.integers(min_value=0, max_value=5)),
        degraded_threshold_ms=draw(st.none() | st.floats(min_value=1, max_value=2_000)),
        region_ids=REGION_POOL[:size],
        quorum=draw(st.none() | st.integers(min_value=1, max_value=size)),
    )


def result_sequences(config: Settings, max_bursts: int = 25) -> st.SearchStrategy[list[Result]]:
    # Bursts of identical outcomes, so that long failure streaks (and outages) are common.
    burst = st.tuples(
        st.sampled_from(config.region_ids),
        st.booleans(),
        st.integers(min_value=1, max_value=7),
        response_times,
    )
    return st.lists(burst, max_size=max_bursts).map(
        lambda bursts: [
            Result(region_id=region, ok=ok, response_time_ms=ms)
            for region, ok, times, ms in bursts
            for _ in range(times)
        ]
    )


@dataclass(frozen=True)
class Scenario:
    config: Settings
    results: list[Result]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    config = draw(monitor_settings())
    return Scenario(config=config, results=draw(result_sequences(config)))


@st.composite
def monitor_states(draw: st.DrawFn) -> MonitorState:
    region_states = st.builds(
        RegionState,
        consecutive_failures=st.integers(min_value=0, max_value=10),
        last_ok=st.none() | st.booleans(),
        last_response_ms=response_times,
    )
    return MonitorState(
        status=draw(st.sampled_from(MonitorStatus)),
        # A plain dict, so that any mutation by apply would be visible.
        regions=draw(st.dictionaries(st.sampled_from(REGION_POOL), region_states)),
        open_incident=draw(st.booleans()),
    )


def run(
    config: Settings, results: Iterable[Result], state: MonitorState | None = None
) -> list[Transition]:
    transitions = []
    current = state or MonitorState()
    for result in results:
        transition = apply(current, result, config)
        transitions.append(transition)
        current = transition.state
    return transitions


def quorum_of(config: Settings) -> int:
    return config.quorum or len(config.region_ids) // 2 + 1


def failure_streaks(results: Sequence[Result]) -> dict[str, int]:
    """Trailing run of failures per region, computed from the history alone."""
    streaks: dict[str, int] = {}
    for result in results:
        streaks[result.region_id] = 0 if result.ok else streaks.get(result.region_id, 0) + 1
    return streaks


def regions_down(config: Settings, results: Sequence[Result]) -> int:
    return sum(1 for s in failure_streaks(results).values() if s >= config.retries + 1)


UP_STATES = (MonitorStatus.UP, MonitorStatus.DEGRADED)


# --- properties -------------------------------------------------------------------------------


@FAST
@given(scenarios())
def test_a_monitor_is_down_exactly_when_a_quorum_of_regions_failed_retries_plus_one_times(
    scenario: Scenario,
) -> None:
    transitions = run(scenario.config, scenario.results)
    for seen, transition in enumerate(transitions, start=1):
        down = regions_down(scenario.config, scenario.results[:seen])
        is_down = transition.state.status is MonitorStatus.DOWN
        assert is_down == (down >= quorum_of(scenario.config))


@FAST
@given(scenarios())
def test_a_single_region_is_down_only_after_retries_plus_one_failures_in_a_row(
    scenario: Scenario,
) -> None:
    config = Settings(
        retries=scenario.config.retries,
        degraded_threshold_ms=scenario.config.degraded_threshold_ms,
        region_ids=("eu-west",),
    )
    results = [r for r in scenario.results if r.region_id == "eu-west"]
    for seen, transition in enumerate(run(config, results), start=1):
        streak = failure_streaks(results[:seen]).get("eu-west", 0)
        if transition.state.status is MonitorStatus.DOWN:
            assert streak >= config.retries + 1
        if results[seen - 1].ok:
            assert transition.state.status in UP_STATES


@FAST
@given(scenarios())
def test_the_first_success_after_an_outage_brings_the_monitor_back_once_the_quorum_breaks(
    scenario: Scenario,
) -> None:
    transitions = run(scenario.config, scenario.results)
    for seen, transition in enumerate(transitions, start=1):
        result = scenario.results[seen - 1]
        quorum_holds = regions_down(scenario.config, scenario.results[:seen]) >= quorum_of(
            scenario.config
        )
        if transition.previous_status is MonitorStatus.DOWN and result.ok and not quorum_holds:
            assert transition.state.status in UP_STATES
            assert transition.changed


@FAST
@given(scenarios())
def test_incidents_alternate_open_then_resolve_and_the_state_remembers_the_open_one(
    scenario: Scenario,
) -> None:
    expected_next = IncidentAction.OPEN
    for transition in run(scenario.config, scenario.results):
        if transition.incident is not IncidentAction.NONE:
            # Never two OPENs without a RESOLVE between them, and no RESOLVE before an OPEN.
            assert transition.incident is expected_next
            expected_next = (
                IncidentAction.RESOLVE
                if expected_next is IncidentAction.OPEN
                else IncidentAction.OPEN
            )
        assert transition.state.open_incident == (expected_next is IncidentAction.RESOLVE)


@FAST
@given(scenarios())
def test_an_incident_opens_when_the_monitor_turns_down_and_resolves_when_it_comes_back(
    scenario: Scenario,
) -> None:
    for transition in run(scenario.config, scenario.results):
        status, previous = transition.state.status, transition.previous_status
        turned_down = status is MonitorStatus.DOWN and previous is not MonitorStatus.DOWN
        came_back = previous is MonitorStatus.DOWN and status in UP_STATES
        assert (transition.incident is IncidentAction.OPEN) == turned_down
        assert (transition.incident is IncidentAction.RESOLVE) == came_back


@FAST
@given(scenarios())
def test_a_monitor_is_pending_until_a_success_or_an_outage(scenario: Scenario) -> None:
    for seen, transition in enumerate(run(scenario.config, scenario.results), start=1):
        history = scenario.results[:seen]
        decided = any(r.ok for r in history) or any(
            regions_down(scenario.config, history[:k]) >= quorum_of(scenario.config)
            for k in range(1, seen + 1)
        )
        assert (transition.state.status is MonitorStatus.PENDING) == (not decided)


@FAST
@given(scenarios())
def test_degraded_means_most_up_regions_answered_slower_than_the_threshold(
    scenario: Scenario,
) -> None:
    threshold = scenario.config.degraded_threshold_ms
    for transition in run(scenario.config, scenario.results):
        up = [r for r in transition.state.regions.values() if r.last_ok is True]
        if not up:
            continue  # inconclusive evidence keeps the previous status, by design
        timed = [r.last_response_ms for r in up if r.last_response_ms is not None]
        if transition.state.status is MonitorStatus.DEGRADED:
            assert threshold is not None
            assert 2 * sum(1 for ms in timed if ms > threshold) > len(timed)
        if transition.state.status is MonitorStatus.UP and threshold is not None:
            assert 2 * sum(1 for ms in timed if ms > threshold) <= len(timed)


@FAST
@given(monitor_states(), monitor_settings(), st.data())
def test_apply_is_deterministic_and_never_mutates_its_input(
    state: MonitorState, config: Settings, data: st.DataObject
) -> None:
    result = data.draw(result_sequences(config, max_bursts=1).filter(bool))[0]
    snapshot = copy.deepcopy(state)
    first = apply(state, result, config)
    second = apply(state, result, config)
    assert first == second
    assert state == snapshot
    assert dict(state.regions) == dict(snapshot.regions)


@FAST
@given(monitor_states(), monitor_settings(), st.data())
def test_a_result_never_changes_the_memory_of_other_regions(
    state: MonitorState, config: Settings, data: st.DataObject
) -> None:
    result = data.draw(result_sequences(config, max_bursts=1).filter(bool))[0]
    after = apply(state, result, config).state
    for region_id, region in state.regions.items():
        if region_id != result.region_id:
            assert after.regions[region_id] == region
    assert set(after.regions) <= set(state.regions) | {result.region_id}


@FAST
@given(monitor_states(), scenarios())
def test_results_of_a_paused_monitor_are_ignored(state: MonitorState, scenario: Scenario) -> None:
    stopped = paused(state)
    for transition in run(scenario.config, scenario.results, stopped):
        assert transition.state == stopped
        assert transition.incident is IncidentAction.NONE
        assert not transition.changed


@FAST
@given(monitor_states(), monitor_settings(), st.booleans(), response_times)
def test_results_from_regions_the_monitor_does_not_use_change_nothing(
    state: MonitorState, config: Settings, ok: bool, ms: float | None
) -> None:
    transition = apply(state, Result(region_id="elsewhere", ok=ok, response_time_ms=ms), config)
    assert transition.state is state
    assert transition.incident is IncidentAction.NONE


@FAST
@given(monitor_states())
def test_resuming_starts_over_as_pending_but_keeps_the_open_incident(state: MonitorState) -> None:
    again = resumed(paused(state))
    assert again.status is MonitorStatus.PENDING
    assert dict(again.regions) == {}
    assert again.open_incident == state.open_incident


# --- examples ---------------------------------------------------------------------------------

ONE_REGION = Settings(retries=2, degraded_threshold_ms=None, region_ids=("eu-west",))
THREE_REGIONS = Settings(
    retries=0, degraded_threshold_ms=None, region_ids=("eu-west", "us-east", "ap-south")
)


def fail(region: str = "eu-west") -> Result:
    return Result(region_id=region, ok=False, response_time_ms=None)


def succeed(region: str = "eu-west", ms: float = 120.0) -> Result:
    return Result(region_id=region, ok=True, response_time_ms=ms)


def final(
    config: Settings, results: Iterable[Result], state: MonitorState | None = None
) -> Transition:
    return run(config, results, state)[-1]


def test_a_failure_within_the_retries_does_not_take_an_up_monitor_down() -> None:
    last = final(ONE_REGION, [succeed(), fail(), fail()])
    assert last.state.status is MonitorStatus.UP
    assert last.incident is IncidentAction.NONE


def test_a_monitor_turns_down_after_retries_plus_one_failures_and_opens_one_incident() -> None:
    transitions = run(ONE_REGION, [succeed(), fail(), fail(), fail(), fail(), fail()])
    assert [t.state.status for t in transitions][-3:] == [MonitorStatus.DOWN] * 3
    assert [t.incident for t in transitions].count(IncidentAction.OPEN) == 1
    assert transitions[3].incident is IncidentAction.OPEN
    assert transitions[3].changed


def test_the_first_success_after_an_outage_resolves_the_incident() -> None:
    last = final(ONE_REGION, [fail(), fail(), fail(), succeed()])
    assert last.previous_status is MonitorStatus.DOWN
    assert last.state.status is MonitorStatus.UP
    assert last.incident is IncidentAction.RESOLVE
    assert not last.state.open_incident


def test_a_new_monitor_stays_pending_while_its_first_failures_are_within_the_retries() -> None:
    last = final(ONE_REGION, [fail(), fail()])
    assert last.state.status is MonitorStatus.PENDING
    assert not last.changed


def test_one_region_failing_alone_does_not_take_a_three_region_monitor_down() -> None:
    last = final(THREE_REGIONS, [succeed("us-east"), fail("eu-west"), fail("eu-west")])
    assert last.state.status is MonitorStatus.UP


def test_two_of_three_regions_failing_take_the_monitor_down() -> None:
    last = final(THREE_REGIONS, [succeed("us-east"), fail("eu-west"), fail("ap-south")])
    assert last.state.status is MonitorStatus.DOWN
    assert last.incident is IncidentAction.OPEN


def test_an_explicit_quorum_of_one_lets_any_region_take_the_monitor_down() -> None:
    config = Settings(
        retries=0, degraded_threshold_ms=None, region_ids=THREE_REGIONS.region_ids, quorum=1
    )
    assert final(config, [succeed("us-east"), fail("ap-south")]).state.status is MonitorStatus.DOWN


def test_a_quorum_larger_than_the_region_count_still_allows_an_outage() -> None:
    config = Settings(retries=0, degraded_threshold_ms=None, region_ids=("eu-west",), quorum=3)
    assert final(config, [fail()]).state.status is MonitorStatus.DOWN


def test_a_slow_success_makes_the_monitor_degraded() -> None:
    config = Settings(retries=0, degraded_threshold_ms=500.0, region_ids=("eu-west",))
    assert final(config, [succeed(ms=800.0)]).state.status is MonitorStatus.DEGRADED
    assert final(config, [succeed(ms=500.0)]).state.status is MonitorStatus.UP


def test_one_slow_region_out_of_three_does_not_degrade_the_monitor() -> None:
    config = Settings(retries=0, degraded_threshold_ms=500.0, region_ids=THREE_REGIONS.region_ids)
    results = [succeed("eu-west", 100), succeed("us-east", 110), succeed("ap-south", 900)]
    assert final(config, results).state.status is MonitorStatus.UP


def test_recovering_into_degraded_also_resolves_the_incident() -> None:
    config = Settings(retries=0, degraded_threshold_ms=500.0, region_ids=("eu-west",))
    last = final(config, [fail(), succeed(ms=900.0)])
    assert last.state.status is MonitorStatus.DEGRADED
    assert last.incident is IncidentAction.RESOLVE


def test_an_incident_left_open_across_a_pause_is_resolved_by_the_first_success_after_resume() -> (
    None
):
    down = final(ONE_REGION, [fail(), fail(), fail()]).state
    restarted = resumed(paused(down))
    assert restarted.status is MonitorStatus.PENDING
    assert restarted.open_incident
    last = final(ONE_REGION, [succeed()], restarted)
    assert last.incident is IncidentAction.RESOLVE


def test_a_monitor_that_goes_down_again_after_resume_does_not_open_a_second_incident() -> None:
    down = final(ONE_REGION, [fail(), fail(), fail()]).state
    last = final(ONE_REGION, [fail(), fail(), fail()], resumed(paused(down)))
    assert last.state.status is MonitorStatus.DOWN
    assert last.incident is IncidentAction.NONE


def test_a_late_success_checked_before_the_failure_that_opened_an_incident_changes_nothing() -> (
    None
):
    config = Settings(retries=0, degraded_threshold_ms=None, region_ids=("eu-west", "us-east"))
    down = final(
        config,
        [
            Result("eu-west", ok=False, response_time_ms=None, due_at=100.5),
            Result("us-east", ok=False, response_time_ms=None, due_at=100.2),
        ],
    )
    assert down.state.status is MonitorStatus.DOWN
    late = apply(down.state, Result("eu-west", True, 5.0, due_at=100.0), config)
    assert late.state == down.state
    assert late.incident is IncidentAction.NONE
    # Another region's result is not late for being older than eu-west's.
    newer = apply(down.state, Result("us-east", True, 5.0, due_at=100.3), config)
    assert newer.state.status is MonitorStatus.UP
    assert newer.incident is IncidentAction.RESOLVE


def test_a_due_time_still_ahead_of_the_clock_is_forgotten_so_new_results_count() -> None:
    config = Settings(retries=0, degraded_threshold_ms=None, region_ids=("eu-west",))
    ahead = final(config, [Result("eu-west", True, 5.0, due_at=10_000.0)]).state
    assert without_future(ahead, now=20_000.0) is ahead
    stepped_back = without_future(ahead, now=500.0)
    assert stepped_back.regions["eu-west"].last_due_at is None
    failed = apply(stepped_back, Result("eu-west", False, None, due_at=400.0), config)
    assert failed.state.status is MonitorStatus.DOWN
    assert failed.incident is IncidentAction.OPEN
