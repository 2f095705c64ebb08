"""How long to wait before trying again: exponential back-off with jitter, one rule for every
retry loop (alert and mail outboxes, the ingester, supervised roles, request conflicts).

Jitter spreads the retries of many failures that began together (a receiver that went down
for every alert at once, every role after a database restart), so they do not hit the
recovering service in step. The wait is drawn from the upper half of the exponential step
("equal jitter"), not from all of it ("full jitter"): a draw near zero would retry an outbox row
in the same drain pass that just failed it, hammering the receiver that asked for a pause.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta

# A source of uniform draws in [0, 1); tests pass their own to pin the draw.
Draw = Callable[[], float]


def backoff_step(attempts: int, first_seconds: float, cap_seconds: float) -> float:
    """The exponential step after the ``attempts``-th failure: first, 2x first, ... capped."""
    exponent = min(max(0, attempts - 1), 64)  # 2**64 x any first delay is past any cap
    return min(first_seconds * 2.0**exponent, cap_seconds)


def jittered_seconds(
    attempts: int, first_seconds: float, cap_seconds: float, draw: Draw = random.random
) -> float:
    """A wait in [step/2, step] for the ``attempts``-th failure; never above the cap."""
    step = backoff_step(attempts, first_seconds, cap_seconds)
    share = min(max(draw(), 0.0), 1.0)
    return step / 2 + step / 2 * share


def backoff(
    attempts: int, first_seconds: float, cap_seconds: float, draw: Draw = random.random
) -> timedelta:
    """``jittered_seconds`` as a ``timedelta``, for rows that store when they are due."""
    return timedelta(seconds=jittered_seconds(attempts, first_seconds, cap_seconds, draw))
