"""A component group's status is its worst member's (statuspages/rules.group_status)."""

from __future__ import annotations

from random import Random
from typing import get_args

from hypothesis import given
from hypothesis import strategies as st

from upwatch.statuspages.rules import ComponentStatus, group_status

statuses = st.sampled_from(get_args(ComponentStatus))
groups = st.lists(statuses, max_size=20)
WORST_FIRST: list[ComponentStatus] = [
    "major_outage",
    "partial_outage",
    "degraded",
    "maintenance",
    "operational",
    "unknown",
]


def test_a_group_with_one_member_down_is_down_whatever_the_others_say() -> None:
    assert group_status(["operational", "major_outage", "degraded"]) == "major_outage"


def test_a_group_ranks_outage_above_degraded_above_maintenance_above_operational() -> None:
    assert group_status(["operational", "maintenance"]) == "maintenance"
    assert group_status(["maintenance", "degraded"]) == "degraded"
    assert group_status(["degraded", "partial_outage"]) == "partial_outage"


def test_members_not_checked_yet_leave_the_others_to_speak() -> None:
    assert group_status(["unknown", "operational"]) == "operational"
    assert group_status(["unknown", "unknown"]) == "unknown"
    assert group_status([]) == "unknown"


@given(groups)
def test_a_group_says_the_worst_status_any_of_its_members_has(
    members: list[ComponentStatus],
) -> None:
    status = group_status(members)
    if members:
        assert status in members
        assert status == next(s for s in WORST_FIRST if s in members)
    else:
        assert status == "unknown"


@given(groups, statuses)
def test_a_member_added_never_makes_its_group_look_better(
    members: list[ComponentStatus], added: ComponentStatus
) -> None:
    before = WORST_FIRST.index(group_status(members))
    assert WORST_FIRST.index(group_status([*members, added])) <= before


@given(groups, st.randoms(use_true_random=False))
def test_a_groups_status_does_not_depend_on_the_order_of_its_members(
    members: list[ComponentStatus], random: Random
) -> None:
    shuffled = list(members)
    random.shuffle(shuffled)
    assert group_status(shuffled) == group_status(members)
