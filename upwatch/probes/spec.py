"""What one check needs to know about its monitor: an immutable snapshot, free of the database.

Built from the monitor row by the engine (``upwatch.engine.targets.MonitorSpec.of``), carried in
jobs to the workers and read by the probes, which therefore never import the models.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from upwatch.probes.assertions import Assertion


@dataclass(frozen=True, slots=True)
class CheckSpec:
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
    # Heartbeats: a cron schedule instead of the interval, its time zone, how late a ping may
    # be (None: the default), and the job's start and failure reports.
    schedule: str | None = None
    timezone: str | None = None
    grace_seconds: int | None = None
    last_start_at: datetime | None = None
    last_fail_at: datetime | None = None
    # HTTP: conditions on the response beyond its status code.
    assertions: tuple[Assertion, ...] = ()
    # The type's own settings (``Monitor.settings``) as canonical JSON text: hashable like the
    # rest of the snapshot, and carried to workers as it is.
    options: str = "{}"
    # TLS-speaking types: days before expiry that are reported (the engine opens warnings).
    certificate_warning_days: tuple[int, ...] = ()

    @property
    def settings(self) -> dict[str, Any]:
        """The type's own settings by API field name."""
        found = json.loads(self.options)
        return found if isinstance(found, dict) else {}
