"""When each monitor is checked in each of its regions.

A heap ordered by due time. Checks run at a fixed rate (due, due + interval, ...), so a slow
check never drifts its schedule. First checks are spread, never fired together:

- at start, a monitor checked before resumes at last check + interval; one overdue (the
  service was down) is checked within ``catchup_seconds``, spread by its id, not in a burst;
  one never checked is spread over min(interval, ``startup_spread_seconds``);
- a monitor created or resumed while running is checked within ``first_check_seconds``.

Changes reach the scheduler through ``changed(monitor_id)``: it reloads that monitor at once.

Jobs go out up to ``lead_seconds`` before they are due, a handful per wake-up, and the worker
starts each at its due time (``Worker``): at 50 checks a second and a 0.5 s lead that is four
wake-ups and four frames to a worker process a second instead of fifty, and no later start.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
from collections.abc import Callable, Sequence

from upwatch.engine.broker import Broker, CheckJob
from upwatch.engine.repository import EngineRepository
from upwatch.engine.targets import MonitorSpec
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.progress import progress, stop_if_cancelled

log = logging.getLogger(__name__)


def spread(monitor_id: str, window: float) -> float:
    """A stable offset in [0, window) from the monitor's id: the same after every restart."""
    return (int(monitor_id[:8], 16) / 0x1_0000_0000) * window if window > 0 else 0.0


class Scheduler:
    def __init__(
        self,
        db: Database,
        broker: Broker,
        clock: Clock,
        region_ids: Callable[[], Sequence[str]],
        first_check_seconds: float = 3.0,
        catchup_seconds: float = 30.0,
        startup_spread_seconds: float = 60.0,
        gone: Callable[[str], None] | None = None,
        lead_seconds: float = 0.0,
    ) -> None:
        self.db = db
        self.lead_seconds = lead_seconds
        self.gone = gone  # told of each monitor a reload finds deleted or paused
        self.broker = broker
        self.clock = clock
        self.region_ids = region_ids
        self.first_check_seconds = first_check_seconds
        self.catchup_seconds = catchup_seconds
        self.startup_spread_seconds = startup_spread_seconds
        self._heap: list[tuple[float, int, str, str, int]] = []
        self._specs: dict[str, tuple[MonitorSpec, int]] = {}
        self._generation = 0
        self._seq = 0
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self.dropped = 0

    def spec(self, monitor_id: str) -> MonitorSpec | None:
        entry = self._specs.get(monitor_id)
        return entry[0] if entry else None

    @property
    def monitors(self) -> int:
        return len(self._specs)

    def changed(self, monitor_id: str) -> None:
        self._dirty.add(monitor_id)
        self._wake.set()

    def _push(self, due: float, monitor_id: str, region_id: str, generation: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, monitor_id, region_id, generation))

    def _regions_of(self, spec: MonitorSpec) -> Sequence[str]:
        return spec.region_ids or self.region_ids()

    def _track(self, spec: MonitorSpec, first_due: float) -> None:
        self._generation += 1
        self._specs[spec.id] = (spec, self._generation)
        for region_id in self._regions_of(spec):
            self._push(first_due, spec.id, region_id, self._generation)

    def _resume_due(self, spec: MonitorSpec, now: float) -> float:
        if spec.last_checked_at is None:
            window = min(spec.interval_seconds, self.startup_spread_seconds)
            return now + spread(spec.id, window)
        due = spec.last_checked_at.timestamp() + spec.interval_seconds
        if due < now:
            return now + spread(spec.id, min(spec.interval_seconds, self.catchup_seconds))
        return due

    async def load(self) -> None:
        """Every active monitor, scheduled to resume without a burst or a gap."""
        async with self.db.workreader() as session:
            monitors = await EngineRepository(session).active_monitors()
        self._heap.clear()  # a restarted scheduler starts from the database afresh
        self._specs.clear()
        now = self.clock.now().timestamp()
        for monitor in monitors:
            spec = MonitorSpec.of(monitor)
            self._track(spec, self._resume_due(spec, now))
        log.info("scheduler tracks %d monitors", len(self._specs))

    async def _reload(self, monitor_ids: set[str]) -> None:
        async with self.db.workreader() as session:
            monitors = {m.id: m for m in await EngineRepository(session).monitors(monitor_ids)}
        now = self.clock.now().timestamp()
        for monitor_id in monitor_ids:
            monitor = monitors.get(monitor_id)
            old = self._specs.pop(monitor_id, None)  # its heap entries die with the generation
            if monitor is None or not monitor.is_active:
                if self.gone is not None:
                    self.gone(monitor_id)
                continue
            spec = MonitorSpec.of(monitor)
            if (
                old is not None
                and old[0].interval_seconds == spec.interval_seconds
                and (old[0].region_ids == spec.region_ids)
            ):
                # Same schedule, new details (a heartbeat, a renamed check): keep the rhythm.
                self._specs[monitor_id] = (spec, old[1])
                continue
            self._track(spec, now + spread(monitor_id, self.first_check_seconds))

    def due_jobs(self, now: float) -> list[CheckJob]:
        """Pop every check due by ``now`` and schedule its next run."""
        jobs = []
        while self._heap and self._heap[0][0] <= now:
            due, _, monitor_id, region_id, generation = heapq.heappop(self._heap)
            entry = self._specs.get(monitor_id)
            if entry is None or entry[1] != generation:
                continue  # deleted, paused or rescheduled since
            spec = entry[0]
            jobs.append(CheckJob(spec=spec, region_id=region_id, due_at=due))
            following = due + spec.interval_seconds
            # Far behind (the machine stalled): skip missed runs rather than burst to catch up.
            self._push(max(following, now), monitor_id, region_id, generation)
        return jobs

    async def run(self) -> None:
        await self.load()
        reload_failing = False
        while True:
            stop_if_cancelled()
            if self._dirty:
                dirty = set(self._dirty)
                try:
                    await self._reload(dirty)
                    self._dirty -= dirty
                    if reload_failing:
                        log.warning("scheduler reads monitor changes again")
                    reload_failing = False
                except Exception as exc:
                    # The database is away: keep checking what is known and keep the changes
                    # for the next tick, rather than stop every check in the house.
                    if not reload_failing:
                        log.warning("scheduler cannot read monitor changes yet: %s", exc)
                    reload_failing = True
            lead = self.lead_seconds
            jobs = self.due_jobs(self.clock.now().timestamp() + lead)
            if jobs:
                self.dropped += len(jobs) - await self.broker.publish_jobs(jobs)
            progress()
            self._wake.clear()
            wait = 1.0
            if self._heap:
                # When the next check enters the lead, but not sooner than half of it: the
                # jobs of half a lead go out together.
                ahead = self._heap[0][0] - lead - self.clock.now().timestamp()
                wait = min(wait, max(lead / 2, ahead))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._wake.wait()
