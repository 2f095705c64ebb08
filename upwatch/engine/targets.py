"""The monitor snapshot a check runs on, built from the monitor row.

The snapshot itself (``CheckSpec``) lives with the probes, below the engine; this subclass only
adds reading it from the database model, which the probes must not know.
"""

from __future__ import annotations

from upwatch.models import Monitor
from upwatch.probes.assertions import assertion_of
from upwatch.probes.spec import CheckSpec


class MonitorSpec(CheckSpec):
    __slots__ = ()

    def __reduce__(self) -> tuple[type[CheckSpec], tuple[object, ...]]:
        """Pickled as the plain snapshot: a worker process unpickles it without importing
        the models (and the database layer behind them)."""
        return CheckSpec, tuple(getattr(self, name) for name in CheckSpec.__slots__)

    @classmethod
    def of(cls, monitor: Monitor) -> MonitorSpec:
        return cls(
            id=monitor.id,
            project_id=monitor.project_id,
            type=monitor.type,
            url=monitor.url,
            method=monitor.method,
            headers=tuple(sorted((str(k), str(v)) for k, v in (monitor.headers or {}).items())),
            body=monitor.body,
            expected_status_codes=tuple(monitor.expected_status_codes or ()),
            keyword=monitor.keyword,
            host=monitor.host,
            port=monitor.port,
            record_type=monitor.record_type,
            expected_value=monitor.expected_value,
            interval_seconds=monitor.interval_seconds,
            timeout_seconds=monitor.timeout_seconds,
            region_ids=tuple(monitor.region_ids or ()),
            created_at=monitor.created_at,
            last_checked_at=monitor.last_checked_at,
            last_ping_at=monitor.last_ping_at,
            schedule=monitor.schedule,
            timezone=monitor.timezone,
            grace_seconds=monitor.grace_seconds,
            last_start_at=monitor.last_start_at,
            last_fail_at=monitor.last_fail_at,
            assertions=tuple(assertion_of(a) for a in monitor.assertions or ()),
        )
