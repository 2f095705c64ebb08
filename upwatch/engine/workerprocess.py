"""Probe workers in a child process: their timings hold no wait for the parent's other work.

The embedded service runs its API, scheduler and ingester on one event loop. A probe timed on
that loop also times whatever else the loop did meanwhile (a batch of inserts, a request), so
under load recorded response times grew 10-20x. Here the probes run in a child process with a
loop of their own, which also puts a second core to work.

The link is a Unix socket pair carrying length-prefixed pickled frames:

- parent to child: ``("jobs", [(tag, job), ...])``;
- child to parent: ``("results", [(tag, report), ...])``, ``("acks", [tag, ...])`` for jobs
  that ended without a result (a probe bug, logged in the child), and ``("beat",)`` while idle.
  Results are gathered for up to ``_GATHER_SECONDS`` into one frame.

Acknowledgement and redelivery: the parent keeps every job it sent until its result or ack
comes back, and sends at most ``window`` at a time (bounded memory on both sides). When the
child dies, the jobs it held go back to the head of the region's queue and the supervisor
starts a new child after a back-off; a report id is made where the check ran, so a result that
arrives twice is stored once. The parent reads the socket only while the result queue has room,
so a database that cannot keep up holds the child's probes back instead of growing memory.

The child needs no database: it imports the probes, not the models (``MonitorSpec`` pickles as
the plain ``CheckSpec``). It exits when the socket closes, so it never outlives its parent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pickle
import socket
import struct
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from upwatch.engine.broker import CheckJob, CheckReport, MemoryBroker
from upwatch.engine.worker import observe
from upwatch.kit.progress import progress

if TYPE_CHECKING:
    from upwatch.kit.metrics import Metrics

log = logging.getLogger(__name__)

_LENGTH = struct.Struct("!I")
# Imported, not run as ``-m``: the module keeps its name (in log lines, in pickles).
_CHILD_MAIN = (
    "import sys; from upwatch.engine.workerprocess import main; sys.exit(main(sys.argv[1:]))"
)
_BEAT_SECONDS = 2.0
# Results the child gathers before it waits for the parent to read them.
_MAX_OUTGOING = 2_000
# Results wait this long for others to share their frame: one write and one wake-up on each
# side for many checks. They wait longer than this in the ingester's batch anyway.
_GATHER_SECONDS = 0.1


class ChildDied(Exception):
    """The worker process ended or closed its end of the link."""


@dataclass(frozen=True)
class ChildConfig:
    """What a worker process needs: no database address, no secret."""

    region_id: str
    concurrency: int
    allow_private: bool
    loopback_only: bool
    log_format: str = "text"
    log_level: str = "info"


def _encode(message: tuple[Any, ...]) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(body)) + body


async def _read(reader: asyncio.StreamReader) -> tuple[Any, ...]:
    try:
        (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
        message: tuple[Any, ...] = pickle.loads(await reader.readexactly(length))  # noqa: S301
    except (asyncio.IncompleteReadError, ConnectionError) as exc:
        raise ChildDied("the link closed") from exc
    return message


class WorkerProcess:
    """The parent's end: starts one child, feeds it a region's jobs, takes its results.

    ``run`` is a supervised role: it returns never, and raises ``ChildDied`` when the child
    goes, after putting the jobs the child held back in the queue.
    """

    def __init__(
        self,
        broker: MemoryBroker,
        config: ChildConfig,
        metrics: Metrics | None = None,
        window: int | None = None,
        stop_seconds: float = 5.0,
    ) -> None:
        self.broker = broker
        self.config = config
        self.metrics = metrics
        self.window = window or 4 * config.concurrency
        self.stop_seconds = stop_seconds
        self.pid: int | None = None
        self.in_flight: dict[int, CheckJob] = {}
        self._tags = 0
        self._room = asyncio.Event()

    async def run(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _CHILD_MAIN,
                str(theirs.fileno()),
                json.dumps(asdict(self.config)),
                pass_fds=(theirs.fileno(),),
                stdin=asyncio.subprocess.DEVNULL,
                # Its own session: a Ctrl-C meant for the service reaches the parent only,
                # which stops the child by closing the link, after its own roles stopped.
                start_new_session=True,
            )
        finally:
            theirs.close()
        self.pid = process.pid
        log.info("worker process %d started for region %s", process.pid, self.config.region_id)
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._send(writer))
                tasks.create_task(self._receive(reader))
        except* ChildDied:
            code = await _ended(process, self.stop_seconds)
            raise ChildDied(f"worker process {process.pid} ended (exit code {code})") from None
        finally:
            writer.close()
            await _ended(process, self.stop_seconds)
            if self.in_flight:
                log.warning(
                    "worker process %d held %d checks: they are queued again",
                    process.pid,
                    len(self.in_flight),
                )
                self.broker.requeue_jobs(list(self.in_flight.values()))
                self.in_flight.clear()
            self.pid = None

    async def _send(self, writer: asyncio.StreamWriter) -> None:
        region_id = self.config.region_id
        while True:
            while len(self.in_flight) >= self.window:
                self._room.clear()
                await self._room.wait()
            jobs = await self.broker.next_jobs(region_id, self.window - len(self.in_flight))
            framed = []
            for job in jobs:
                self._tags += 1
                self.in_flight[self._tags] = job
                framed.append((self._tags, job))
            writer.write(_encode(("jobs", framed)))
            try:
                await writer.drain()
            except ConnectionError as exc:
                raise ChildDied("the link closed") from exc

    async def _receive(self, reader: asyncio.StreamReader) -> None:
        while True:
            message = await _read(reader)
            kind = message[0]
            if kind == "results":
                for tag, report in message[1]:
                    job = self.in_flight.get(tag)
                    # Waits while the result queue is full: the child's writes then back up.
                    await self.broker.publish_result(report)
                    self.in_flight.pop(tag, None)
                    if self.metrics is not None and job is not None:
                        observe(self.metrics, job, report)
            elif kind == "acks":
                for tag in message[1]:
                    self.in_flight.pop(tag, None)
            self._room.set()
            progress()


async def _ended(process: asyncio.subprocess.Process, grace_seconds: float) -> int:
    """Wait for the child to exit (it does once the link closes); kill it after the grace."""
    if process.returncode is None:
        try:
            async with asyncio.timeout(grace_seconds):
                await process.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    return process.returncode if process.returncode is not None else -1


class LinkBroker:
    """The child's end of the link: the ``JobSource`` its worker takes jobs from."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._jobs: asyncio.Queue[CheckJob] = asyncio.Queue()
        # The parent's tag of each job held, by what a report says of its job.
        self._tags: dict[tuple[str, str, float], int] = {}
        self._results: list[tuple[int, CheckReport]] = []
        self._acks: list[int] = []
        self._outgoing = asyncio.Event()
        self._drained = asyncio.Event()

    async def next_job(self, region_id: str) -> CheckJob:
        return await self._jobs.get()

    async def ack_job(self, job: CheckJob) -> None:
        tag = self._tags.pop((job.spec.id, job.region_id, job.due_at), None)
        if tag is not None:  # no result went back for it
            self._acks.append(tag)
            self._outgoing.set()

    async def publish_result(self, report: CheckReport) -> None:
        while len(self._results) >= _MAX_OUTGOING:
            self._drained.clear()
            await self._drained.wait()
        tag = self._tags.pop((report.monitor_id, report.region_id, report.due_at), None)
        if tag is not None:
            self._results.append((tag, report))
            self._outgoing.set()

    def depth(self) -> dict[str, int]:
        return {"jobs": self._jobs.qsize(), "results": len(self._results)}

    async def receive(self) -> None:
        """Take the parent's jobs until the link closes."""
        while True:
            message = await _read(self.reader)
            if message[0] == "jobs":
                for tag, job in message[1]:
                    self._tags[(job.spec.id, job.region_id, job.due_at)] = tag
                    self._jobs.put_nowait(job)

    async def send(self) -> None:
        """Send results and acks in one frame per turn of the loop; a beat while idle."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_BEAT_SECONDS):
                    await self._outgoing.wait()
            if self._outgoing.is_set() and len(self._results) < _MAX_OUTGOING:
                await asyncio.sleep(_GATHER_SECONDS)
            self._outgoing.clear()
            if not self._results and not self._acks:
                self.writer.write(_encode(("beat",)))
            if self._results:
                results, self._results = self._results, []
                self.writer.write(_encode(("results", results)))
            if self._acks:
                acks, self._acks = self._acks, []
                self.writer.write(_encode(("acks", acks)))
            try:
                await self.writer.drain()
            except ConnectionError as exc:
                raise ChildDied("the link closed") from exc
            self._drained.set()


async def _child(fd: int, config: ChildConfig) -> None:
    # Imported here: the parent needs none of it to start children.
    from upwatch.engine.checks import ProbeKit
    from upwatch.engine.worker import Worker
    from upwatch.kit.clock import Clock
    from upwatch.kit.net import NetworkGuard, guarded_session

    reader, writer = await asyncio.open_unix_connection(sock=socket.socket(fileno=fd))
    broker = LinkBroker(reader, writer)
    guard = NetworkGuard(allow_private=config.allow_private, loopback_only=config.loopback_only)
    kit = ProbeKit(guard=guard, http=guarded_session(guard))
    worker = Worker(config.region_id, broker, kit, Clock(), None, config.concurrency)
    try:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(broker.receive())
            tasks.create_task(broker.send())
            tasks.create_task(worker.run())
    except* ChildDied:
        pass  # the parent went or closed the link: the child's work is over
    finally:
        await kit.http.close()


def main(argv: Sequence[str]) -> int:
    from upwatch.kit.logs import configure_handler

    fd, config = int(argv[0]), ChildConfig(**json.loads(argv[1]))
    configure_handler(config.log_format, config.log_level)
    log.info("worker process %d checks region %s", os.getpid(), config.region_id)
    started = time.monotonic()
    try:
        import uvloop

        uvloop.run(_child(fd, config))
    except ImportError:  # pragma: no cover - uvloop comes with uvicorn[standard]
        asyncio.run(_child(fd, config))
    except KeyboardInterrupt:
        return 0
    log.info("worker process %d stops after %.0f s", os.getpid(), time.monotonic() - started)
    return 0
