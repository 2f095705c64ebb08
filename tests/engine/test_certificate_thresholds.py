"""Which warning days a certificate's days left cross (engine/certificates.py), as pure rules."""

from __future__ import annotations

import itertools
from typing import Any

from upwatch.engine.certificates import crossed, days_left


def ids() -> Any:
    counter = itertools.count(1)
    return lambda: f"i{next(counter)}"


def state_of(entry: dict[str, Any]) -> dict[str, Any]:
    return {"regions": {}, "incident": False, "certificate": entry}


def test_days_under_a_warning_day_open_its_warning_and_every_larger_one() -> None:
    change, entry = crossed(5, None, None, None, ids())

    assert change.opened == [(14, "i1"), (7, "i2")]
    assert change.resolved == []
    assert entry == {"open": {"14": "i1", "7": "i2"}}


def test_a_warning_day_itself_is_not_crossed_yet() -> None:
    change, entry = crossed(14, None, None, None, ids())

    assert not change
    assert entry == {"open": {}}


def test_a_warning_already_open_never_opens_twice() -> None:
    change, entry = crossed(9, None, None, state_of({"open": {"14": "a"}}), ids())

    assert not change
    assert entry == {"open": {"14": "a"}}


def test_a_renewed_certificate_resolves_every_open_warning() -> None:
    change, entry = crossed(300, None, None, state_of({"open": {"14": "a", "7": "b"}}), ids())

    assert change.resolved == [(14, "a"), (7, "b")]
    assert change.opened == []
    assert entry == {"open": {}}


def test_a_renewal_still_under_a_warning_day_resolves_only_the_ones_it_left() -> None:
    change, entry = crossed(10, None, None, state_of({"open": {"14": "a", "7": "b"}}), ids())

    assert change.resolved == [(7, "b")]
    assert entry == {"open": {"14": "a"}}


def test_a_warning_day_taken_off_the_monitor_resolves_its_warning() -> None:
    change, entry = crossed(5, None, [30], state_of({"open": {"14": "a", "7": "b"}}), ids())

    assert change.resolved == [(14, "a"), (7, "b")]
    assert change.opened == [(30, "i1")]
    assert entry == {"open": {"30": "i1"}}


def test_only_whole_days_reported_as_a_number_count() -> None:
    assert days_left({"daysToExpiry": 12}) == 12
    assert days_left({"daysToExpiry": -3}) == -3
    assert days_left({"daysToExpiry": True}) is None
    assert days_left({"daysToExpiry": "12"}) is None
    assert days_left({}) is None
