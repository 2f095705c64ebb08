"""Heartbeat evaluation: pure, from timestamps only, so it is tested without I/O or sleeping."""

from __future__ import annotations

from datetime import datetime, timedelta

from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.probe import ProbeKit
from upwatch.probes.spec import CheckSpec

# A heartbeat may arrive this long after its interval before the monitor counts as down.
HEARTBEAT_GRACE_SECONDS = 60


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def heartbeat_outcome(
    last_ping_at: datetime | None,
    created_at: datetime,
    now: datetime,
    interval_seconds: int,
    grace_seconds: int,
) -> Outcome:
    """Up while a ping arrived within ``interval + grace``, counted from the last ping.

    Before the first ping the count starts at ``created_at``, so a new monitor gets one full
    period to receive its first ping. The deadline itself is still on time.
    """
    since = last_ping_at if last_ping_at is not None else created_at
    deadline = since + timedelta(seconds=interval_seconds + grace_seconds)
    details: dict[str, object] = {
        "lastPingAt": None if last_ping_at is None else _iso(last_ping_at),
        "deadline": _iso(deadline),
    }
    if now <= deadline:
        return Outcome(ok=True, response_time_ms=None, details=details)
    late = now - deadline
    if last_ping_at is None:
        error = f"no ping since the monitor was created at {_iso(created_at)}"
    else:
        error = f"no ping since {_iso(last_ping_at)}"
    overdue = int(late.total_seconds())
    return Outcome(
        ok=False,
        response_time_ms=None,
        error_kind=ErrorKind.MISSED_HEARTBEAT,
        error=(
            f"{error} (expected every {interval_seconds}s with {grace_seconds}s grace;"
            f" {overdue}s overdue)"
        ),
        details=details,
    )


class HeartbeatProbe:
    """Reads the last ping from the spec: nothing is contacted."""

    async def check(self, spec: CheckSpec, kit: ProbeKit, now: datetime) -> Outcome:
        return heartbeat_outcome(
            spec.last_ping_at,
            spec.created_at,
            now,
            spec.interval_seconds,
            HEARTBEAT_GRACE_SECONDS,
        )
