"""The pure rules of what a status page says: component, day and overall status."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from upwatch.statuspages.rules import (
    ComponentStatus,
    component_status,
    day_status,
    day_uptime,
    overall_status,
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


def test_an_empty_or_unknown_page_is_operational() -> None:
    assert overall_status([]) == "operational"
    assert overall_status(["unknown", "unknown"]) == "operational"


def test_the_banner_ranks_outage_above_degraded_above_maintenance() -> None:
    assert overall_status(["major_outage", "major_outage", "unknown"]) == "major_outage"
    assert overall_status(["major_outage", "operational"]) == "partial_outage"
    assert overall_status(["partial_outage", "operational"]) == "partial_outage"
    assert overall_status(["degraded", "maintenance", "operational"]) == "degraded"
    assert overall_status(["maintenance", "operational"]) == "maintenance"


@given(pages)
def test_the_banner_is_operational_exactly_when_no_known_component_is_anything_else(
    page: list[ComponentStatus],
) -> None:
    calm = all(s in {"operational", "unknown"} for s in page)
    assert (overall_status(page) == "operational") == calm


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
