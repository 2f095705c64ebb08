"""Paging as pure functions: which escalation steps and which reminders are due at a moment.

A policy is an ordered list of steps. Step ``i`` is due ``delay`` minutes after step ``i - 1``
was due (step 1: after the incident opened), so a step is paged when no one acknowledged the
incident in the time the steps before it had. Steps are paged in order, each at most once:
the incident keeps how many were paged. A reminder to a provider is due ``every`` minutes
after the last alert it got for the incident. Nothing is due once the incident is
acknowledged or resolved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class Step:
    provider_ids: tuple[str, ...]
    delay_minutes: int


@dataclass(frozen=True, slots=True)
class Paging:
    """Where an incident stands: when it opened, how many steps were paged, and whether a
    person has taken it (acknowledged) or it is over (resolved)."""

    opened_at: datetime
    steps_paged: int
    acknowledged: bool
    resolved: bool

    @property
    def settled(self) -> bool:
        return self.acknowledged or self.resolved


def step_due_at(steps: Sequence[Step], index: int, opened_at: datetime) -> datetime:
    """When step ``index`` (from 0) comes due."""
    return opened_at + timedelta(minutes=sum(s.delay_minutes for s in steps[: index + 1]))


def steps_due(steps: Sequence[Step], paging: Paging, now: datetime) -> range:
    """The steps to page now: those not yet paged whose time has come, in order."""
    if paging.settled:
        return range(paging.steps_paged, paging.steps_paged)
    reached = paging.steps_paged
    while reached < len(steps) and step_due_at(steps, reached, paging.opened_at) <= now:
        reached += 1
    return range(paging.steps_paged, max(reached, paging.steps_paged))


def providers_of(steps: Sequence[Step], indexes: Iterable[int]) -> list[str]:
    """The providers of those steps, each once, in step order."""
    return list(dict.fromkeys(p for i in indexes for p in steps[i].provider_ids))


def reminders_due(
    paging: Paging,
    every_minutes: Mapping[str, int | None],
    last_alerted: Mapping[str, datetime],
    now: datetime,
) -> list[str]:
    """Providers to remind now: each that was alerted for the incident and repeats, whose
    interval since its last alert has passed."""
    if paging.settled:
        return []
    return sorted(
        provider_id
        for provider_id, every in every_minutes.items()
        if every is not None
        and provider_id in last_alerted
        and now >= last_alerted[provider_id] + timedelta(minutes=every)
    )
