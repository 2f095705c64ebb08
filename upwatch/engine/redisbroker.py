"""The ``Broker`` protocol over Redis Streams, for roles that run as separate processes.

Streams, each read by one consumer group:

- ``{prefix}:jobs:{region}``, group ``workers``: the checks one region's workers run;
- ``{prefix}:results``, group ``ingesters``: what the workers found.

Delivery is at least once. XREADGROUP makes an entry pending for the consumer that read it;
it is acknowledged and deleted (XACK and XDEL in one MULTI) only once its work is done: a
worker's job in the same transaction that adds its result, the ingester's results after their
database transaction committed. An entry pending longer than ``reclaim_seconds`` (its consumer
died) is taken over with XAUTOCLAIM by the next reader of that stream. A result delivered twice
is stored once (its report id is unique), so redelivery costs a duplicate read, never a
duplicate row.

Memory in Redis stays bounded: acknowledged entries are deleted, so a stream holds only what
waits or is in flight; the scheduler adds jobs only while a region's stream holds fewer than
``max_jobs_per_region`` (the rest are dropped and counted, as in memory), and a worker holds
its results back while the result stream holds ``max_results`` (back-pressure: a database that
cannot keep up slows the workers, it does not fill Redis). An entry that is not a job or
report of this version is logged and deleted, never retried forever; so is a job that waited
longer than its interval plus twice ``reclaim_seconds`` (its region had no worker), so a
worker that comes back runs the current checks, not a burst of stale ones.

Calls are batched: the scheduler's jobs of one wake-up go in one pipeline, a worker sends its
results and acknowledgements together every ``gather_seconds``, and the ingester reads a batch
in two or three calls.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError

from upwatch.engine.broker import CheckJob, CheckReport
from upwatch.engine.wire import Malformed, decode_job, decode_report, encode_job, encode_report

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

WORKERS = "workers"
INGESTERS = "ingesters"
_FIELD = b"m"  # each entry has one field: the message


def _job_key(job: CheckJob) -> tuple[str, str, float]:
    return (job.spec.id, job.region_id, job.due_at)


class RedisBroker:
    """One process's end of the streams; ``consumer`` names it within the groups (unique per
    process: a restarted process is a new consumer, and the old one's entries are reclaimed).

    A worker process needs ``pump()`` running: it sends the results and acknowledgements its
    checks queued.
    """

    def __init__(
        self,
        redis: Redis,
        consumer: str,
        prefix: str = "upwatch",
        max_jobs_per_region: int = 100_000,
        max_results: int = 20_000,
        reclaim_seconds: float = 60.0,
        prefetch: int = 100,
        gather_seconds: float = 0.05,
        block_seconds: float = 1.0,
        max_outgoing: int = 2_000,
    ) -> None:
        self.redis = redis
        self.consumer = consumer
        self.prefix = prefix
        self.max_jobs = max_jobs_per_region
        self.max_results = max_results
        self.reclaim_seconds = reclaim_seconds
        self.prefetch = prefetch
        self.gather_seconds = gather_seconds
        self.block_ms = max(1, round(block_seconds * 1000))
        self.max_outgoing = max_outgoing
        self.results_stream = f"{prefix}:results"
        self.malformed = 0  # entries deleted because they could not be read
        self.expired = 0  # jobs deleted because they waited longer than worth running
        self._groups: set[str] = set()
        self._reclaimed_at: dict[str, float] = {}
        # Worker side: jobs read and not yet taken, and where each delivered job came from.
        self._local: dict[str, collections.deque[CheckJob]] = {}
        self._held_jobs: dict[tuple[str, str, float], tuple[str, bytes]] = {}
        self._reads: dict[str, asyncio.Task[list[tuple[bytes, Any]]]] = {}
        self._outgoing: list[bytes] = []
        self._acks: list[tuple[str, bytes]] = []
        self._queued = asyncio.Event()
        self._drained = asyncio.Event()
        # Ingester side: the entries each delivered report came in (twice if it was sent twice).
        self._held_results: dict[str, list[bytes]] = {}

    def jobs_stream(self, region_id: str) -> str:
        return f"{self.prefix}:jobs:{region_id}"

    # -- groups and reclaiming -------------------------------------------------------------

    async def _group(self, stream: str, group: str) -> None:
        """Create the stream's group once, from the stream's start: jobs added before the
        first worker came are read too."""
        if stream in self._groups:
            return
        try:
            await self.redis.xgroup_create(stream, group, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._groups.add(stream)

    async def _read(
        self, stream: str, group: str, count: int, block_ms: int | None
    ) -> list[tuple[bytes, Any]]:
        """New entries of ``stream`` for this consumer, and first any entry a dead consumer
        left pending (looked for every half ``reclaim_seconds``)."""
        await self._group(stream, group)
        entries: list[tuple[bytes, Any]] = []
        now = time.monotonic()
        if now - self._reclaimed_at.get(stream, 0.0) >= self.reclaim_seconds / 2:
            self._reclaimed_at[stream] = now
            entries.extend(await self._reclaim(stream, group, count))
            if entries:
                block_ms = None
        if len(entries) < count:
            answer: Any  # RESP2 (the default): [[stream, [(id, fields), ...]]]
            try:
                answer = await self.redis.xreadgroup(
                    group, self.consumer, {stream: ">"}, count=count - len(entries), block=block_ms
                )
            except ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
                # The stream went (Redis restarted without a disk): make the group again.
                self._groups.discard(stream)
                await self._group(stream, group)
                answer = []
            for _name, found in answer or ():
                entries.extend(found)
        return entries

    async def _reclaim(self, stream: str, group: str, count: int) -> list[tuple[bytes, Any]]:
        idle_ms = max(1, round(self.reclaim_seconds * 1000))
        try:
            answer = await self.redis.xautoclaim(
                stream, group, self.consumer, min_idle_time=idle_ms, start_id="0-0", count=count
            )
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self._groups.discard(stream)  # the stream went with a Redis restart: nothing held
            await self._group(stream, group)
            return []
        claimed: list[tuple[bytes, Any]] = [e for e in answer[1] if e[1] is not None]
        if claimed:
            log.warning(
                "took over %d entries of %s that a stopped consumer held for over %.0f s",
                len(claimed),
                stream,
                self.reclaim_seconds,
            )
        return claimed

    async def _settle(self, entries: Iterable[tuple[str, bytes]]) -> None:
        """Acknowledge and delete entries: done with, never delivered again."""
        by_stream: dict[str, list[bytes]] = {}
        for stream, entry_id in entries:
            by_stream.setdefault(stream, []).append(entry_id)
        if not by_stream:
            return
        async with self.redis.pipeline(transaction=True) as pipe:
            for stream, ids in by_stream.items():
                group = INGESTERS if stream == self.results_stream else WORKERS
                pipe.xack(stream, group, *ids)
                pipe.xdel(stream, *ids)
            await pipe.execute()

    def _unreadable(self, stream: str, entry_id: bytes, exc: Exception) -> tuple[str, bytes]:
        self.malformed += 1
        log.error("deleting entry %s of %s: %s", entry_id.decode(), stream, exc)
        return (stream, entry_id)

    # -- scheduler -------------------------------------------------------------------------

    async def publish_jobs(self, jobs: Sequence[CheckJob]) -> int:
        """Add jobs to their regions' streams, each region up to its bound; how many were
        added (the rest are dropped). Two calls whatever the number of jobs."""
        by_region: dict[str, list[CheckJob]] = {}
        for job in jobs:
            by_region.setdefault(job.region_id, []).append(job)
        if not by_region:
            return 0
        regions = list(by_region)
        async with self.redis.pipeline(transaction=False) as pipe:
            for region_id in regions:
                pipe.xlen(self.jobs_stream(region_id))
            lengths = await pipe.execute()
        added = 0
        async with self.redis.pipeline(transaction=False) as pipe:
            for region_id, length in zip(regions, lengths, strict=True):
                room = max(0, self.max_jobs - int(length))
                for job in by_region[region_id][:room]:
                    pipe.xadd(self.jobs_stream(region_id), {_FIELD: encode_job(job)})
                    added += 1
            if added:
                await pipe.execute()
        return added

    async def publish_job(self, job: CheckJob) -> bool:
        return await self.publish_jobs([job]) == 1

    # -- worker ----------------------------------------------------------------------------

    async def next_job(self, region_id: str) -> CheckJob:
        local = self._local.setdefault(region_id, collections.deque())
        stream = self.jobs_stream(region_id)
        while not local:
            # Shielded: a caller that stops waiting (a worker's idle wake-up) must not cut a
            # read whose entries Redis already counts as delivered; the next call takes them.
            read = self._reads.get(region_id)
            if read is None:
                read = self._reads[region_id] = asyncio.create_task(
                    self._read(stream, WORKERS, self.prefetch, self.block_ms)
                )
            try:
                entries = await asyncio.shield(read)
            finally:
                if read.done():
                    del self._reads[region_id]
            done_with, expired = [], 0
            now = time.time()
            for entry_id, fields in entries:
                try:
                    job = decode_job(fields[_FIELD])
                except (Malformed, KeyError) as exc:
                    done_with.append(self._unreadable(stream, entry_id, exc))
                    continue
                if now - job.due_at > job.spec.interval_seconds + 2 * self.reclaim_seconds:
                    # Queued while the region had no worker: a later check of the monitor
                    # stands for it; a burst of stale checks would only load the targets.
                    done_with.append((stream, entry_id))
                    expired += 1
                    continue
                self._held_jobs[_job_key(job)] = (stream, entry_id)
                local.append(job)
            if expired:
                self.expired += expired
                log.warning(
                    "dropped %d checks of region %s queued too long ago (no worker took them)",
                    expired,
                    region_id,
                )
            await self._settle(done_with)
        return local.popleft()

    async def publish_result(self, report: CheckReport) -> None:
        while len(self._outgoing) >= self.max_outgoing:
            self._drained.clear()
            await self._drained.wait()
        self._outgoing.append(encode_report(report))
        self._queued.set()

    async def ack_job(self, job: CheckJob) -> None:
        held = self._held_jobs.pop(_job_key(job), None)
        if held is not None:
            # Sent with the results queued before it: after its own result, never before.
            self._acks.append(held)
            self._queued.set()

    async def pump(self) -> None:
        """Send queued results and job acknowledgements, together, every ``gather_seconds``;
        hold them while the result stream is full. A failed send keeps them for the next
        run (the supervisor restarts this after a back-off)."""
        while True:
            await self._queued.wait()
            await asyncio.sleep(self.gather_seconds)
            self._queued.clear()
            try:
                await self.flush()
            except BaseException:
                self._queued.set()  # still queued: the restarted pump sends them first
                raise

    async def flush(self) -> None:
        if self._outgoing:
            # No group made here: the ingesters' group reads from the stream's start, and a
            # worker's Redis user may not touch groups of the result stream.
            # Polled: the room is made by ingesters in other processes.
            while True:
                if await self.redis.xlen(self.results_stream) < self.max_results:
                    break
                await asyncio.sleep(self.gather_seconds * 10)
        # Copies: results and acks queued while this send is on its way stay for the next.
        results, acks = list(self._outgoing), list(self._acks)
        if not results and not acks:
            return
        by_stream: dict[str, list[bytes]] = {}
        for stream, entry_id in acks:
            by_stream.setdefault(stream, []).append(entry_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            for data in results:
                pipe.xadd(self.results_stream, {_FIELD: data})
            for stream, ids in by_stream.items():
                pipe.xack(stream, WORKERS, *ids)
                pipe.xdel(stream, *ids)
            await pipe.execute()
        # Only now: a failed send above keeps both lists for the next attempt.
        del self._outgoing[: len(results)]
        del self._acks[: len(acks)]
        self._drained.set()

    # -- ingester --------------------------------------------------------------------------

    async def next_results(self, max_batch: int, max_wait: float) -> list[CheckReport]:
        """Wait for at least one result, then gather for up to ``max_wait`` seconds."""
        stream = self.results_stream
        batch: list[CheckReport] = []
        started = time.monotonic()
        while not batch:
            batch.extend(await self._reports(stream, max_batch, self.block_ms))
        remaining = max_wait - (time.monotonic() - started)
        if len(batch) < max_batch and remaining > 0:
            await asyncio.sleep(remaining)
            batch.extend(await self._reports(stream, max_batch - len(batch), None))
        return batch

    async def _reports(self, stream: str, count: int, block_ms: int | None) -> list[CheckReport]:
        reports, unreadable = [], []
        for entry_id, fields in await self._read(stream, INGESTERS, count, block_ms):
            try:
                report = decode_report(fields[_FIELD], time.time())
            except (Malformed, KeyError) as exc:
                unreadable.append(self._unreadable(stream, entry_id, exc))
                continue
            self._held_results.setdefault(report.id, []).append(entry_id)
            reports.append(report)
        await self._settle(unreadable)
        return reports

    async def ack_results(self, reports: Sequence[CheckReport]) -> None:
        stream = self.results_stream
        done = [
            (stream, entry_id)
            for report in reports
            for entry_id in self._held_results.pop(report.id, ())
        ]
        await self._settle(done)

    async def close(self) -> None:
        """Stop reads in progress (their entries, if any, are reclaimed later)."""
        reads = list(self._reads.values())
        self._reads.clear()
        for read in reads:
            read.cancel()
        await asyncio.gather(*reads, return_exceptions=True)

    def depth(self) -> dict[str, int]:
        """What this process holds locally (Redis holds the rest: XLEN of each stream)."""
        depths = {f"jobs:{region}": len(queue) for region, queue in self._local.items()}
        depths["results"] = len(self._outgoing)
        return depths
