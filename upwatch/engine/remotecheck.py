""" "Check now" in an API process of a distributed deployment: the check runs where scheduled
checks run, in a worker of one of the monitor's regions, and is stored by an ingester; the
API process waits for that stored result.

The job names the id its report will carry, so the wait looks for exactly that row. A job run
twice (its worker died mid-check) is stored once under that id.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from upwatch.engine.broker import Broker, CheckJob
from upwatch.engine.repository import EngineRepository
from upwatch.engine.targets import MonitorSpec
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.errors import ServiceUnavailable
from upwatch.kit.ids import new_id
from upwatch.models import CheckResult, Monitor


@dataclass(eq=False)
class RemoteChecks:
    db: Database
    broker: Broker
    clock: Clock
    online_seconds: float
    # Beyond the check's own timeout: the job's way to a worker, the result's to the
    # database (an ingester's batch wait).
    extra_wait_seconds: float
    poll_seconds: float = 0.1

    async def check_now(self, monitor: Monitor) -> CheckResult | None:
        spec = MonitorSpec.of(monitor)
        async with self.db.readsession() as session:
            online = await EngineRepository(session).online_region_ids(
                self.clock.now(), self.online_seconds
            )
        # The first of its regions with a worker online; a monitor without regions is
        # checked in every online region, so any of them.
        candidates = [r for r in spec.region_ids if r in online] if spec.region_ids else online
        if not candidates:
            raise ServiceUnavailable(
                "no worker of this monitor's regions is online to check it now",
                headers={"Retry-After": "30"},
            )
        report_id = new_id()
        sent = self.clock.now()
        job = CheckJob(spec=spec, region_id=candidates[0], due_at=time.time(), report_id=report_id)
        if await self.broker.publish_jobs([job]) == 0:
            raise ServiceUnavailable(
                "the region's queue is full; try again shortly", headers={"Retry-After": "10"}
            )
        deadline = time.monotonic() + spec.timeout_seconds + self.extra_wait_seconds
        while time.monotonic() < deadline:
            async with self.db.readsession() as session:
                # The first result from that region since the job was sent: this one, or a
                # scheduled check that got there first, which answers as well.
                stored = await EngineRepository(session).result(spec.id, candidates[0], sent)
            if stored is not None:
                return stored
            await asyncio.sleep(self.poll_seconds)
        raise ServiceUnavailable(
            "the check was handed to a worker but its result has not been stored yet; it will "
            "appear under the monitor's checks",
            headers={"Retry-After": "30"},
        )
