"""The paging rules, property-tested: a pager that wakes at arbitrary moments pages each step
once, in order, never before its time and never once the incident is acknowledged or
resolved; reminders keep their interval and stop at acknowledgement or resolution."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from upwatch.escalation.rules import (
    Paging,
    Step,
    providers_of,
    reminders_due,
    step_due_at,
    steps_due,
)

OPENED = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)

steps_strategy = st.lists(
    st.builds(
        Step,
        st.lists(st.sampled_from("abcdef"), min_size=1, max_size=3).map(tuple),
        st.integers(min_value=0, max_value=120),
    ),
    min_size=1,
    max_size=6,
)
# Minutes after the incident opened at which the pager wakes.
wakes = st.lists(st.integers(min_value=0, max_value=600), max_size=40).map(sorted)
maybe_minute = st.none() | st.integers(min_value=0, max_value=600)


def at(minute: int) -> datetime:
    return OPENED + timedelta(minutes=minute)


def settled_by(minute: int, acknowledged: int | None, resolved: int | None) -> tuple[bool, bool]:
    return (
        acknowledged is not None and minute >= acknowledged,
        resolved is not None and minute >= resolved,
    )


@given(steps_strategy, wakes, maybe_minute, maybe_minute)
def test_escalation_pages_each_step_once_in_order_on_time_and_never_after_it_is_settled(
    steps: list[Step], ticks: list[int], acknowledged: int | None, resolved: int | None
) -> None:
    paged: list[tuple[int, int]] = []  # (step, minute)
    count = 0
    for minute in ticks:
        ack, done = settled_by(minute, acknowledged, resolved)
        due = steps_due(steps, Paging(OPENED, count, ack, done), at(minute))
        paged += [(step, minute) for step in due]
        count = max(due.stop, count)
    order = [step for step, _ in paged]
    assert order == list(range(len(order)))  # in order, each once
    for step, minute in paged:
        assert step_due_at(steps, step, OPENED) <= at(minute)  # never early
        ack, done = settled_by(minute, acknowledged, resolved)
        assert not ack
        assert not done
    # Not late either: a step due by a wake before the incident settled was paged by then.
    for minute in ticks:
        if any(settled_by(minute, acknowledged, resolved)):
            break
        for step in range(len(steps)):
            if step_due_at(steps, step, OPENED) <= at(minute):
                assert any(s == step and m <= minute for s, m in paged)


@given(
    st.dictionaries(st.sampled_from("abcdef"), st.none() | st.integers(5, 120), max_size=6),
    wakes,
    maybe_minute,
    maybe_minute,
)
def test_reminders_keep_their_interval_and_never_come_after_acknowledgement_or_resolution(
    every: dict[str, int | None], ticks: list[int], acknowledged: int | None, resolved: int | None
) -> None:
    last = dict.fromkeys(every, OPENED)  # all alerted when it opened
    sent: dict[str, list[int]] = {provider: [] for provider in every}
    for minute in ticks:
        ack, done = settled_by(minute, acknowledged, resolved)
        for provider in reminders_due(Paging(OPENED, 1, ack, done), every, last, at(minute)):
            assert not ack
            assert not done
            sent[provider].append(minute)
            last[provider] = at(minute)
    for provider, minutes in sent.items():
        interval = every[provider]
        if interval is None:
            assert minutes == []
            continue
        previous = 0
        for minute in minutes:
            assert minute - previous >= interval
            previous = minute


def test_providers_of_several_steps_are_named_once_in_step_order() -> None:
    steps = [Step(("a", "b"), 0), Step(("b", "c"), 5), Step(("d",), 5)]
    assert providers_of(steps, range(2)) == ["a", "b", "c"]
    assert providers_of(steps, range(0)) == []


def test_a_provider_never_alerted_is_not_reminded() -> None:
    paging = Paging(OPENED, 1, acknowledged=False, resolved=False)
    assert reminders_due(paging, {"a": 5, "b": 5}, {"a": OPENED}, at(60)) == ["a"]
