"""The in-process broker's bounds: full queues refuse or hold back, readiness says who lags."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.engine.test_worker_process import REGION, job
from upwatch.engine.broker import CheckReport, MemoryBroker
from upwatch.probes.outcome import Outcome


def report_of(due_at: float) -> CheckReport:
    now = datetime.now(UTC)
    return CheckReport("m", REGION, due_at, due_at, now, Outcome(ok=True, response_time_ms=1.0))


async def test_jobs_put_back_go_first_even_past_the_queues_limit() -> None:
    broker = MemoryBroker(max_jobs_per_region=2)
    queued = [job("http://127.0.0.1:9/a"), job("http://127.0.0.1:9/b")]
    for one in queued:
        assert await broker.publish_job(one)
    assert not await broker.publish_job(job("http://127.0.0.1:9/c"))  # full: dropped
    held = [job("http://127.0.0.1:9/held-1"), job("http://127.0.0.1:9/held-2")]
    broker.requeue_jobs(held)
    taken = await broker.next_jobs(REGION, 10)
    assert [j.spec.url for j in taken] == [j.spec.url for j in held + queued]


async def test_readiness_names_a_region_whose_oldest_queued_check_is_overdue() -> None:
    broker = MemoryBroker()
    late = job("http://127.0.0.1:9/late")
    assert await broker.publish_job(late)
    assert broker.behind(late.due_at + 29, late_seconds=30) == []
    [reason] = broker.behind(late.due_at + 31, late_seconds=30)
    assert reason.startswith(f"checks of region {REGION} start 31 s late (1 queued)")


async def test_readiness_says_storing_cannot_keep_up_when_results_fill_their_queue() -> None:
    broker = MemoryBroker(max_results=10)
    for _ in range(8):
        await broker.publish_result(report_of(0.0))
    assert broker.behind(0.0, late_seconds=30) == []
    await broker.publish_result(report_of(0.0))
    [reason] = broker.behind(0.0, late_seconds=30)
    assert reason.startswith("9 results wait to be stored (limit 10)")
