"""The supervisor: a failing role restarts alone, is counted, and readiness sees stalls."""

from __future__ import annotations

import asyncio
import logging

import pytest

from tests.conftest import eventually
from upwatch.app import stop_tasks
from upwatch.kit.metrics import Metrics
from upwatch.kit.supervisor import Supervisor, progress


def restarts(metrics: Metrics, role: str) -> float:
    value = metrics.registry.get_sample_value("upwatch_role_restarts_total", {"role": role})
    return value or 0.0


async def test_a_failing_role_restarts_alone_and_is_counted_while_the_others_keep_working(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = Metrics()
    supervisor = Supervisor(metrics, first_backoff_seconds=0.01, max_backoff_seconds=0.05)
    runs = 0
    steady_beats = 0

    async def flaky() -> None:
        nonlocal runs
        runs += 1
        if runs <= 3:
            raise RuntimeError(f"injected failure {runs}")
        while True:
            progress()
            await asyncio.sleep(0.01)

    async def steady() -> None:
        nonlocal steady_beats
        while True:
            steady_beats += 1
            progress()
            await asyncio.sleep(0.01)

    with caplog.at_level(logging.INFO, logger="upwatch.kit.supervisor"):
        supervisor.start("flaky", flaky, period_seconds=1)
        supervisor.start("steady", steady, period_seconds=1)
        try:
            await eventually(lambda: runs >= 4 and supervisor.roles["flaky"].failures == 0)
            beats_before = steady_beats
            await eventually(lambda: steady_beats > beats_before)
        finally:
            await stop_tasks(supervisor.tasks)

    assert restarts(metrics, "flaky") == 3
    assert restarts(metrics, "steady") == 0
    messages = [r.getMessage() for r in caplog.records]
    # The streak reads as a story: the first failure with its stack, then one line each.
    with_stack = [r for r in caplog.records if r.exc_info]
    assert len(with_stack) == 1
    assert "injected failure 1" in str(with_stack[0].exc_info[1])  # type: ignore[index]
    assert sum("failed again" in m for m in messages) == 2
    assert any("works again after 3 failures" in m for m in messages)


async def test_a_role_that_returns_is_restarted_too() -> None:
    metrics = Metrics()
    supervisor = Supervisor(metrics, first_backoff_seconds=0.01)
    runs = 0

    async def quits() -> None:
        nonlocal runs
        runs += 1
        if runs > 2:
            await asyncio.Event().wait()

    supervisor.start("quitter", quits, period_seconds=1)
    try:
        await eventually(lambda: runs == 3)
    finally:
        await stop_tasks(supervisor.tasks)
    assert restarts(metrics, "quitter") == 2


async def test_a_role_with_work_and_no_progress_is_stalled_but_an_idle_one_is_not() -> None:
    supervisor = Supervisor(Metrics(), stall_seconds=0.05)
    has_work = False
    release = asyncio.Event()

    async def stuck() -> None:
        await release.wait()

    role = supervisor.start("stuck", stuck, period_seconds=0.01, busy=lambda: has_work)
    try:
        await asyncio.sleep(0)
        role.last_beat -= 1  # as if a second had passed without progress
        assert supervisor.stalled() == []  # nothing to do: idle, not stalled
        has_work = True
        assert supervisor.stalled() == ["role stuck made no progress for 1 s"]
        role.beat()
        assert supervisor.stalled() == []
    finally:
        await stop_tasks(supervisor.tasks)


async def test_a_role_name_is_supervised_once() -> None:
    supervisor = Supervisor(Metrics())

    async def idle() -> None:
        await asyncio.Event().wait()

    supervisor.start("once", idle, period_seconds=1)
    try:
        with pytest.raises(ValueError, match="already supervised"):
            supervisor.start("once", idle, period_seconds=1)
    finally:
        await stop_tasks(supervisor.tasks)


async def test_a_stop_that_a_driver_turned_into_an_ordinary_error_still_stops_the_role() -> None:
    """Drivers answer a cancellation that lands inside them with errors of their own; a
    supervisor that restarted the role then would let it outlive its process's shutdown."""
    metrics = Metrics()
    supervisor = Supervisor(metrics, first_backoff_seconds=0.01)
    started = asyncio.Event()

    async def on_a_driver() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise ConnectionResetError("connection lost while cancelled") from None

    role = supervisor.start("driver", on_a_driver, period_seconds=1)
    await started.wait()
    await stop_tasks(supervisor.tasks)
    assert role.task is not None
    assert role.task.cancelled()
    assert restarts(metrics, "driver") == 0
