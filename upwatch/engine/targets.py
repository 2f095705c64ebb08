"""The monitor snapshot a check runs on, built from the monitor row.

The snapshot itself (``CheckSpec``) lives with the probes, below the engine; this subclass only
adds reading it from the database model, which the probes must not know.
"""

from __future__ import annotations

import json

from upwatch.models import Monitor
from upwatch.probes.assertions import assertion_of
from upwatch.probes.spec import CheckSpec

# The snapshot's fields the monitor row holds as they are; the others are made hashable in
# ``MonitorSpec.of`` (a snapshot is compared and used as a key by the scheduler).
AS_STORED = tuple(
    name
    for name in CheckSpec.__slots__
    if name
    not in {
        "headers",
        "expected_status_codes",
        "region_ids",
        "assertions",
        "options",
        "certificate_warning_days",
    }
)


class MonitorSpec(CheckSpec):
    __slots__ = ()

    def __reduce__(self) -> tuple[type[CheckSpec], tuple[object, ...]]:
        """Pickled as the plain snapshot: a worker process unpickles it without importing
        the models (and the database layer behind them)."""
        return CheckSpec, tuple(getattr(self, name) for name in CheckSpec.__slots__)

    @classmethod
    def of(cls, monitor: Monitor) -> MonitorSpec:
        return cls(
            **{name: getattr(monitor, name) for name in AS_STORED},
            headers=tuple(sorted((str(k), str(v)) for k, v in (monitor.headers or {}).items())),
            expected_status_codes=tuple(monitor.expected_status_codes or ()),
            region_ids=tuple(monitor.region_ids or ()),
            assertions=tuple(assertion_of(a) for a in monitor.assertions or ()),
            options=json.dumps(monitor.settings or {}, sort_keys=True, separators=(",", ":")),
            certificate_warning_days=tuple(monitor.certificate_warning_days or ()),
        )
