"""The Redis Streams broker against a real Redis: delivery, acknowledgement, reclaiming, bounds."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from redis.asyncio import Redis

from tests.conftest import forget_redis_keys
from tests.engine.test_worker_process import REGION, job
from upwatch.engine.broker import CheckJob, CheckReport
from upwatch.engine.redisbroker import RedisBroker
from upwatch.engine.wire import Malformed, decode_job, decode_report, encode_job, encode_report
from upwatch.probes.outcome import ErrorKind, Outcome, Timings

WITHIN = 10.0  # a bound on waiting for Redis, not a speed

MakeBroker = Callable[..., RedisBroker]


@pytest.fixture
async def make_broker(redis: Redis, redis_url: str) -> AsyncIterator[MakeBroker]:
    """Brokers of one test share a key prefix of their own; its keys go at the end."""
    prefix = f"test-{uuid.uuid4().hex}"

    def make(**options: Any) -> RedisBroker:
        return RedisBroker(redis, consumer=uuid.uuid4().hex, prefix=prefix, **options)

    yield make
    await forget_redis_keys(redis_url, prefix)


def report_for(checked: CheckJob, ok: bool = True) -> CheckReport:
    return CheckReport(
        monitor_id=checked.spec.id,
        region_id=checked.region_id,
        due_at=checked.due_at,
        started_at=checked.due_at,
        checked_at=datetime.now(UTC),
        outcome=Outcome(ok=ok, response_time_ms=1.5, timings=Timings(total_ms=1.5)),
    )


async def take(broker: RedisBroker, region_id: str = REGION) -> CheckJob:
    return await asyncio.wait_for(broker.next_job(region_id), WITHIN)


async def results(broker: RedisBroker, count: int) -> list[CheckReport]:
    found: list[CheckReport] = []
    while len(found) < count:
        found += await asyncio.wait_for(broker.next_results(count - len(found), 0.05), WITHIN)
    return found


async def pending(redis: Redis, stream: str, group: str) -> int:
    return int((await redis.xpending(stream, group))["pending"])


async def test_a_job_reaches_only_the_workers_of_its_region(make_broker: MakeBroker) -> None:
    scheduler, worker = make_broker(), make_broker()
    ours, theirs = job("http://127.0.0.1:9/ours"), job("http://127.0.0.1:9/theirs")
    theirs = CheckJob(spec=theirs.spec, region_id="region-b", due_at=theirs.due_at)
    assert await scheduler.publish_jobs([ours, theirs]) == 2
    taken = await take(worker)
    assert taken.spec == ours.spec
    assert taken.due_at == ours.due_at
    assert (await take(worker, "region-b")).spec.url == "http://127.0.0.1:9/theirs"


async def test_a_checked_job_and_its_stored_result_leave_no_entry_behind(
    make_broker: MakeBroker, redis: Redis
) -> None:
    scheduler, worker, ingester = make_broker(), make_broker(), make_broker()
    queued = [job(f"http://127.0.0.1:9/{n}") for n in range(3)]
    assert await scheduler.publish_jobs(queued) == 3
    for _ in queued:
        taken = await take(worker)
        await worker.publish_result(report_for(taken))
        await worker.ack_job(taken)
    await worker.flush()
    jobs = worker.jobs_stream(REGION)
    assert await redis.xlen(jobs) == 0  # acknowledged with the results, and deleted
    stored = await results(ingester, 3)
    assert sorted(r.monitor_id for r in stored) == sorted(j.spec.id for j in queued)
    assert await pending(redis, ingester.results_stream, "ingesters") == 3  # until stored
    await ingester.ack_results(stored)
    assert await redis.xlen(ingester.results_stream) == 0
    assert await pending(redis, ingester.results_stream, "ingesters") == 0


async def test_a_result_waits_for_the_flush_and_its_job_stays_pending_until_then(
    make_broker: MakeBroker, redis: Redis
) -> None:
    scheduler, worker = make_broker(), make_broker()
    await scheduler.publish_jobs([job("http://127.0.0.1:9/a")])
    taken = await take(worker)
    await worker.publish_result(report_for(taken))
    await worker.ack_job(taken)
    jobs = worker.jobs_stream(REGION)
    # Not sent yet: a worker killed now leaves its job pending, to be run again elsewhere.
    assert await pending(redis, jobs, "workers") == 1
    assert await redis.xlen(worker.results_stream) == 0
    await worker.flush()
    assert await pending(redis, jobs, "workers") == 0
    assert await redis.xlen(worker.results_stream) == 1


async def test_jobs_a_stopped_worker_held_are_taken_over_by_another_after_the_timeout(
    make_broker: MakeBroker, redis: Redis
) -> None:
    scheduler = make_broker()
    dead, alive = make_broker(reclaim_seconds=0.3), make_broker(reclaim_seconds=0.3)
    held = job("http://127.0.0.1:9/held")
    await scheduler.publish_jobs([held])
    assert (await take(dead)).spec.id == held.spec.id  # and never acknowledged
    again = await take(alive)
    assert again.spec.id == held.spec.id
    assert again.due_at == held.due_at
    await alive.publish_result(report_for(again))
    await alive.ack_job(again)
    await alive.flush()
    assert await redis.xlen(alive.jobs_stream(REGION)) == 0


async def test_results_a_stopped_ingester_read_are_delivered_again_and_stored_once(
    make_broker: MakeBroker, redis: Redis
) -> None:
    worker = make_broker()
    dead, alive = make_broker(reclaim_seconds=0.3), make_broker(reclaim_seconds=0.3)
    sent = report_for(job("http://127.0.0.1:9/a"))
    await worker.publish_result(sent)
    await worker.publish_result(sent)  # sent twice (a flush retried after a lost reply)
    await worker.flush()
    assert [r.id for r in await results(dead, 2)] == [sent.id, sent.id]  # never acknowledged
    again = await results(alive, 2)
    assert {r.id for r in again} == {sent.id}
    await alive.ack_results(again[:1])  # one report id: both of its entries
    assert await redis.xlen(alive.results_stream) == 0


async def test_a_full_region_stream_takes_no_more_jobs(
    make_broker: MakeBroker, redis: Redis
) -> None:
    scheduler = make_broker(max_jobs_per_region=3)
    assert await scheduler.publish_jobs([job(f"http://127.0.0.1:9/{n}") for n in range(5)]) == 3
    assert not await scheduler.publish_job(job("http://127.0.0.1:9/late"))
    assert await redis.xlen(scheduler.jobs_stream(REGION)) == 3


async def test_a_worker_holds_its_results_while_the_result_stream_is_full(
    make_broker: MakeBroker,
) -> None:
    first, second = make_broker(max_results=2), make_broker(max_results=2, gather_seconds=0.01)
    ingester = make_broker()
    for n in range(2):
        await first.publish_result(report_for(job(f"http://127.0.0.1:9/{n}")))
    await first.flush()
    waiting = report_for(job("http://127.0.0.1:9/held"))
    await second.publish_result(waiting)
    sending = asyncio.create_task(second.flush())
    done, _ = await asyncio.wait({sending}, timeout=0.5)
    assert not done  # still held back: the stream is full
    await ingester.ack_results(await results(ingester, 2))
    await asyncio.wait_for(sending, WITHIN)
    [held] = await results(ingester, 1)
    assert held.id == waiting.id


async def test_an_entry_that_is_not_a_job_is_deleted_and_counted(
    make_broker: MakeBroker, redis: Redis
) -> None:
    scheduler, worker = make_broker(), make_broker()
    stream = worker.jobs_stream(REGION)
    await redis.xadd(stream, {b"m": b'{"spec": "not a spec"}'})
    await redis.xadd(stream, {b"other": b"field"})
    good = job("http://127.0.0.1:9/good")
    await scheduler.publish_jobs([good])
    assert (await take(worker)).spec.id == good.spec.id
    assert worker.malformed == 2
    assert await redis.xlen(stream) == 1  # only the good job, until it is acknowledged


async def test_a_stream_lost_with_redis_gets_its_group_back(
    make_broker: MakeBroker, redis: Redis
) -> None:
    scheduler, worker = make_broker(), make_broker(block_seconds=0.05)
    await scheduler.publish_jobs([job("http://127.0.0.1:9/before")])
    await take(worker)
    await redis.delete(worker.jobs_stream(REGION))  # as after a restart without a disk
    after = job("http://127.0.0.1:9/after")
    await scheduler.publish_jobs([after])
    assert (await take(worker)).spec.id == after.spec.id


def wire_report(**changes: Any) -> CheckReport:
    outcome = Outcome(
        ok=False,
        response_time_ms=None,
        error_kind=ErrorKind.DNS,
        error="no such host",
        timings=Timings(dns_ms=3.0),
        details={"addresses": ["192.0.2.1"]},
    )
    fields: dict[str, Any] = {
        "monitor_id": "m",
        "region_id": REGION,
        "due_at": 1.5,
        "started_at": 1.6,
        "checked_at": datetime.now(UTC),
        "outcome": outcome,
    }
    return CheckReport(**{**fields, **changes})


def test_a_report_crosses_the_wire_unchanged_and_garbage_is_refused() -> None:
    sent = wire_report()
    assert decode_report(encode_report(sent), time.time()) == sent
    with pytest.raises(Malformed):
        decode_report(b'{"monitor_id": 1}', time.time())


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"outcome": Outcome(ok=True, response_time_ms=-1.0)}, id="negative time"),
        pytest.param({"checked_at": datetime.now(UTC).replace(tzinfo=None)}, id="no time zone"),
        pytest.param({"checked_at": datetime(9999, 12, 31, tzinfo=UTC)}, id="far future"),
        pytest.param({"region_id": "r" * 33}, id="region id too long"),
        pytest.param({"outcome": Outcome(ok=False, response_time_ms=None, status_code=2**40)}),
        pytest.param({"outcome": Outcome(ok=False, response_time_ms=None, error="x" * 5000)}),
    ],
)
def test_a_report_that_would_break_a_batch_is_refused_at_the_wire(bad: dict[str, Any]) -> None:
    with pytest.raises(Malformed):
        decode_report(encode_report(wire_report(**bad)), time.time())


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"region_id": "r\n"}, id="a newline after the id"),
        pytest.param({"report_id": "x" * 33}, id="report id too long"),
        pytest.param({"report_id": "a b"}, id="report id with a space"),
    ],
)
def test_a_job_with_an_id_that_fits_no_column_is_refused_at_the_wire(bad: dict[str, Any]) -> None:
    sent = job("http://127.0.0.1:9/")
    fields = {"spec": sent.spec, "region_id": REGION, "due_at": 1.5, **bad}
    with pytest.raises(Malformed):
        decode_job(encode_job(CheckJob(**fields)))


def test_a_job_carries_the_id_its_report_will_have() -> None:
    sent = CheckJob(
        spec=job("http://127.0.0.1:9/").spec, region_id=REGION, due_at=1.5, report_id="r1"
    )
    assert decode_job(encode_job(sent)) == sent


def test_a_report_with_a_number_json_cannot_store_is_refused() -> None:
    sent = encode_report(wire_report(outcome=Outcome(ok=True, response_time_ms=1.0)))
    forged = sent.replace(b'"response_time_ms":1.0', b'"response_time_ms":NaN')
    assert forged != sent
    with pytest.raises(Malformed):
        decode_report(forged, time.time())


async def test_a_bad_report_is_deleted_and_the_good_ones_beside_it_are_delivered(
    make_broker: MakeBroker, redis: Redis
) -> None:
    worker, ingester = make_broker(), make_broker()
    poison = wire_report(checked_at=datetime(9999, 12, 31, tzinfo=UTC))
    await worker.publish_result(poison)
    good = report_for(job("http://127.0.0.1:9/good"))
    await worker.publish_result(good)
    await worker.flush()
    [delivered] = await results(ingester, 1)
    assert delivered.id == good.id
    assert ingester.malformed == 1
    await ingester.ack_results([delivered])
    assert await redis.xlen(ingester.results_stream) == 0


async def test_a_job_that_waited_far_beyond_its_interval_is_dropped_not_run(
    make_broker: MakeBroker, redis: Redis
) -> None:
    scheduler, worker = make_broker(), make_broker(reclaim_seconds=5)
    stale = job("http://127.0.0.1:9/stale")
    stale = CheckJob(spec=stale.spec, region_id=REGION, due_at=stale.due_at - 3600)
    fresh = job("http://127.0.0.1:9/fresh")
    await scheduler.publish_jobs([stale, fresh])
    assert (await take(worker)).spec.id == fresh.spec.id
    assert worker.expired == 1
    assert await redis.xlen(worker.jobs_stream(REGION)) == 1  # the fresh one, in flight
