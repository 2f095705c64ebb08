"""Back-off with jitter: each wait lies in the upper half of its exponential step, never above
the cap, whatever the draw; the draw is injected, so nothing here depends on chance."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from upwatch.kit.backoff import backoff, backoff_step, jittered_seconds

FAST = settings(max_examples=300, deadline=None)


def pinned(value: float) -> Callable[[], float]:
    return lambda: value


attempts = st.integers(min_value=1, max_value=10_000)
firsts = st.floats(min_value=0.001, max_value=3600, allow_nan=False)
caps = st.floats(min_value=0.001, max_value=86_400, allow_nan=False)
draws = st.floats(min_value=0, max_value=1, allow_nan=False)


@FAST
@given(attempts, firsts, caps, draws)
def test_a_wait_lies_in_the_upper_half_of_its_step_and_never_above_the_cap(
    n: int, first: float, cap: float, draw: float
) -> None:
    step = backoff_step(n, first, cap)
    wait = jittered_seconds(n, first, cap, lambda: draw)
    assert step / 2 <= wait <= step <= cap
    assert backoff(n, first, cap, lambda: draw) == timedelta(seconds=wait)


@FAST
@given(attempts, firsts, caps)
def test_steps_double_until_the_cap_and_stay_there(n: int, first: float, cap: float) -> None:
    step, following = backoff_step(n, first, cap), backoff_step(n + 1, first, cap)
    assert following == min(2 * step, cap) or following == cap
    assert step <= following


@FAST
@given(attempts, firsts, caps, draws, draws)
def test_a_larger_draw_never_waits_less(
    n: int, first: float, cap: float, low: float, high: float
) -> None:
    low, high = sorted((low, high))
    assert jittered_seconds(n, first, cap, lambda: low) <= jittered_seconds(
        n, first, cap, lambda: high
    )


def test_the_first_waits_spread_over_the_upper_half_of_the_step() -> None:
    assert [jittered_seconds(1, 5.0, 600.0, pinned(d)) for d in (0.0, 0.5, 1.0)] == [
        2.5,
        3.75,
        5.0,
    ]
    assert [jittered_seconds(n, 5.0, 600.0, lambda: 1.0) for n in (1, 2, 3, 8, 9)] == [
        5.0,
        10.0,
        20.0,
        600.0,
        600.0,
    ]


@FAST
@given(draws)
def test_a_draw_outside_the_unit_range_is_held_to_it(draw: float) -> None:
    assert jittered_seconds(3, 1.0, 30.0, lambda: draw - 5) == 2.0
    assert jittered_seconds(3, 1.0, 30.0, lambda: draw + 5) == 4.0


def test_the_default_draw_stays_within_bounds() -> None:
    # The process's own random source: whatever it draws, the bounds hold.
    rng = random.Random(36)
    for n in range(1, 40):
        wait = jittered_seconds(n, 1.0, 30.0, rng.random)
        step = backoff_step(n, 1.0, 30.0)
        assert step / 2 <= wait <= step
    assert 0.5 <= jittered_seconds(1, 1.0, 30.0) <= 1.0
