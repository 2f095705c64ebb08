"""Running one check: the monitor's type picks the probe from the registry."""

from __future__ import annotations

from datetime import datetime

from upwatch.probes.outcome import Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.registry import probe_for
from upwatch.probes.spec import CheckSpec

__all__ = ["ProbeKit", "run_check"]


async def run_check(spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
    """Raises ``UnknownMonitorType`` (a ``ValueError``) for a type no probe checks."""
    return await probe_for(spec.type).check(spec, kit, now)
