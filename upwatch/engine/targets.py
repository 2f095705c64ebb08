"""What one check needs to know about its monitor: an immutable snapshot of the row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from upwatch.models import Monitor


@dataclass(frozen=True, slots=True)
class MonitorSpec:
    id: str
    project_id: str
    type: str
    url: str | None
    method: str
    headers: tuple[tuple[str, str], ...]
    body: str | None
    expected_status_codes: tuple[int, ...]
    keyword: str | None
    host: str | None
    port: int | None
    record_type: str | None
    expected_value: str | None
    interval_seconds: int
    timeout_seconds: float
    region_ids: tuple[str, ...]
    created_at: datetime
    last_checked_at: datetime | None
    last_ping_at: datetime | None

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
        )
