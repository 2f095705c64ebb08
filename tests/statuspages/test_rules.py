"""The pure rules of what a status page says: component, day and overall status."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from upwatch.statuspages.rules import (
    ComponentStatus,
    Impact,
    component_status,
    day_status,
    day_uptime,
    headline_incident,
    incident_impact,
    overall_status,
    with_incidents,
    worst,
)

statuses = st.sampled_from(
    ["operational", "degraded", "partial_outage", "major_outage", "maintenance", "unknown"]
)
pages = st.lists(statuses, max_size=30)


def test_a_component_shows_its_monitors_status_in_the_pages_words() -> None:
    assert component_status("up") == "operational"
    assert component_status("degraded") == "degraded"
    assert component_status("down") == "major_outage"
    assert component_status("paused") == "unknown"
    assert component_status("pending") == "unknown"


def test_a_monitor_up_while_a_region_fails_is_a_partial_outage() -> None:
    assert component_status("up", ["up", "down", "up"]) == "partial_outage"
    assert component_status("up", ["up", "pending"]) == "operational"


def test_an_empty_or_all_unknown_page_says_it_has_no_data() -> None:
    assert overall_status([]) == "unknown"
    assert overall_status(["unknown", "unknown"]) == "unknown"
    assert overall_status(["unknown", "operational"]) == "operational"


def test_the_banner_ranks_outage_above_degraded_above_maintenance() -> None:
    assert overall_status(["major_outage", "major_outage", "unknown"]) == "major_outage"
    assert overall_status(["major_outage", "operational"]) == "partial_outage"
    assert overall_status(["partial_outage", "operational"]) == "partial_outage"
    assert overall_status(["degraded", "maintenance", "operational"]) == "degraded"
    assert overall_status(["maintenance", "operational"]) == "maintenance"


@given(pages)
def test_the_banner_is_operational_exactly_when_some_component_is_and_none_is_worse(
    page: list[ComponentStatus],
) -> None:
    calm = "operational" in page and all(s in {"operational", "unknown"} for s in page)
    assert (overall_status(page) == "operational") == calm


@given(pages)
def test_the_banner_says_no_data_exactly_when_nothing_is_known(
    page: list[ComponentStatus],
) -> None:
    assert (overall_status(page) == "unknown") == all(s == "unknown" for s in page)


@given(pages)
def test_the_banner_says_major_outage_exactly_when_every_known_component_is_down(
    page: list[ComponentStatus],
) -> None:
    known = [s for s in page if s != "unknown"]
    expected = bool(known) and all(s == "major_outage" for s in known)
    assert (overall_status(page) == "major_outage") == expected


@given(pages, st.permutations(range(30)))
def test_the_banner_does_not_depend_on_the_order_of_components(
    page: list[ComponentStatus], order: list[int]
) -> None:
    shuffled = [page[i] for i in order if i < len(page)]
    assert overall_status(shuffled) == overall_status(page)


@given(pages)
def test_any_component_down_makes_the_banner_an_outage(page: list[ComponentStatus]) -> None:
    assert overall_status([*page, "major_outage"]) in {"partial_outage", "major_outage"}


def test_a_day_without_checks_has_no_data_and_no_uptime() -> None:
    assert day_status(0, 0, 0, 0) == "no_data"
    assert day_uptime(0, 0, 0) is None


def test_a_days_bar_follows_its_failures() -> None:
    assert day_status(100, 100, 0, 0) == "operational"
    assert day_status(100, 90, 10, 0) == "degraded"
    assert day_status(100, 96, 0, 4) == "partial_outage"
    assert day_status(100, 95, 0, 5) == "partial_outage"
    assert day_status(100, 94, 0, 6) == "major_outage"
    assert day_uptime(4, 2, 1) == 75.0


@given(st.integers(0, 10_000), st.integers(0, 10_000), st.integers(0, 10_000))
def test_a_day_is_operational_or_degraded_exactly_when_nothing_failed(
    up: int, degraded: int, down: int
) -> None:
    total = up + degraded + down
    status = day_status(total, up, degraded, down)
    if total == 0:
        assert status == "no_data"
    else:
        assert (status in {"operational", "degraded"}) == (down == 0)
        uptime = day_uptime(total, up, degraded)
        assert uptime is not None
        assert 0 <= uptime <= 100


impacts = st.sampled_from(["degraded", "partial_outage", "major_outage"])
severities = st.sampled_from(["low", "medium", "high", "critical"])
_ORDER = ["unknown", "operational", "maintenance", "degraded", "partial_outage", "major_outage"]


def test_an_incidents_severity_says_its_impact() -> None:
    assert incident_impact("low") == "degraded"
    assert incident_impact("medium") == "degraded"
    assert incident_impact("high") == "partial_outage"
    assert incident_impact("critical") == "major_outage"


@given(pages, st.lists(severities, min_size=1, max_size=5))
def test_a_page_with_an_open_incident_never_says_operational_or_no_data(
    page: list[ComponentStatus], open_severities: list[str]
) -> None:
    said = overall_status(page, [incident_impact(s) for s in open_severities])
    assert said not in {"operational", "unknown", "maintenance"}


@given(pages, st.lists(impacts, max_size=5))
def test_the_banner_is_at_least_the_worst_open_incidents_impact_and_the_components_say(
    page: list[ComponentStatus], opened: list[Impact]
) -> None:
    said = _ORDER.index(overall_status(page, opened))
    assert said >= _ORDER.index(overall_status(page))
    assert all(said >= _ORDER.index(impact) for impact in opened)


@given(pages, st.lists(impacts, max_size=5))
def test_the_banner_is_exactly_the_worse_of_components_and_incidents(
    page: list[ComponentStatus], opened: list[Impact]
) -> None:
    expected = max([overall_status(page), *opened], key=_ORDER.index)
    assert overall_status(page, opened) == expected


def test_a_high_incident_on_a_healthy_page_is_a_partial_outage_unless_components_say_worse() -> (
    None
):
    assert overall_status(["operational"], ["partial_outage"]) == "partial_outage"
    assert overall_status(["unknown"], ["degraded"]) == "degraded"
    assert overall_status(["major_outage"], ["degraded"]) == "major_outage"
    assert overall_status([], ["major_outage"]) == "major_outage"


@given(pages)
def test_the_worst_of_a_group_is_one_of_its_members_and_none_is_worse(
    page: list[ComponentStatus],
) -> None:
    found = worst(page)
    if not page:
        assert found == "unknown"
    else:
        assert found in page
        assert all(_ORDER.index(s) <= _ORDER.index(found) for s in page)


@given(statuses, st.lists(impacts, max_size=4))
def test_a_component_under_an_open_incident_shows_at_least_its_impact(
    status: ComponentStatus, opened: list[Impact]
) -> None:
    shown = with_incidents(status, opened)
    assert _ORDER.index(shown) >= _ORDER.index(status)
    assert all(_ORDER.index(shown) >= _ORDER.index(i) for i in opened)
    if not opened:
        assert shown == status


@given(st.lists(st.tuples(impacts, st.integers()), max_size=8))
def test_the_banner_names_the_newest_of_the_worst_open_incidents(
    opened: list[tuple[Impact, int]],
) -> None:
    named = headline_incident(opened)
    if not opened:
        assert named is None
        return
    top = max(_ORDER.index(i) for i, _ in opened)
    assert named == next(n for i, n in opened if _ORDER.index(i) == top)
