"""Inconclusive results (a check that could not tell, as a registry that did not answer) are
neither successes nor failures for the status machine."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from upwatch.engine.broker import CheckReport
from upwatch.engine.status import (
    MonitorState,
    MonitorStatus,
    RegionState,
    Result,
    Settings,
    apply,
)
from upwatch.engine.wire import decode_report, encode_report
from upwatch.probes.outcome import ErrorKind, Outcome

pytestmark = pytest.mark.db_independent

ONE_REGION = Settings(retries=0, degraded_threshold_ms=None, region_ids=("eu",))


def test_an_inconclusive_result_keeps_an_up_monitor_up() -> None:
    up = apply(MonitorState(), Result("eu", True, 10.0, due_at=1.0), ONE_REGION).state

    after = apply(up, Result("eu", False, None, due_at=2.0, inconclusive=True), ONE_REGION)

    assert after.state.status is MonitorStatus.UP
    assert not after.changed
    assert after.state.regions["eu"].consecutive_failures == 0
    assert after.state.regions["eu"].last_ok is True


def test_an_inconclusive_result_does_not_count_towards_the_retries() -> None:
    retrying = Settings(retries=1, degraded_threshold_ms=None, region_ids=("eu",))
    state = apply(MonitorState(), Result("eu", True, 10.0, due_at=1.0), retrying).state
    state = apply(state, Result("eu", False, None, due_at=2.0), retrying).state
    state = apply(state, Result("eu", False, None, due_at=3.0, inconclusive=True), retrying).state

    assert state.status is MonitorStatus.UP
    assert state.regions["eu"].consecutive_failures == 1
    assert apply(state, Result("eu", False, None, due_at=4.0), retrying).state.status is (
        MonitorStatus.DOWN
    )


def test_a_new_monitor_stays_pending_after_an_inconclusive_result() -> None:
    after = apply(MonitorState(), Result("eu", False, None, inconclusive=True), ONE_REGION)

    assert after.state.status is MonitorStatus.PENDING


def test_a_result_due_before_an_inconclusive_one_is_still_late() -> None:
    down = MonitorState(
        status=MonitorStatus.DOWN,
        regions={"eu": RegionState(consecutive_failures=1, last_ok=False, last_due_at=1.0)},
    )
    state = apply(down, Result("eu", False, None, due_at=5.0, inconclusive=True), ONE_REGION)

    late = apply(state.state, Result("eu", True, 10.0, due_at=3.0), ONE_REGION)

    assert late.state.status is MonitorStatus.DOWN


def test_a_report_from_another_process_keeps_its_inconclusive_mark() -> None:
    outcome = Outcome(
        ok=False,
        response_time_ms=None,
        error_kind=ErrorKind.DOMAIN_LOOKUP,
        error="the RDAP server answered HTTP 503",
        inconclusive=True,
    )
    now = datetime.now(UTC)
    report = CheckReport("m" * 32, "eu", now.timestamp(), now.timestamp(), now, outcome)

    decoded = decode_report(encode_report(report), now.timestamp())

    assert decoded.outcome.inconclusive
