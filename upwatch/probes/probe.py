"""What every probe is: one object per monitor type that turns a spec into an ``Outcome``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import aiohttp

from upwatch.kit.net import NetworkGuard
from upwatch.probes.outcome import Outcome
from upwatch.probes.spec import CheckSpec


@dataclass
class ProbeKit:
    """What probes share: the guard and one keep-alive HTTP session (made in the lifespan)."""

    guard: NetworkGuard
    http: aiohttp.ClientSession


class Probe(Protocol):
    """Checks one monitor type; never raises for a failure on the target's side."""

    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome: ...
