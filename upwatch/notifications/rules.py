"""Pure rules of delivery: quiet hours and whether an alert goes out at all."""

from __future__ import annotations

import zoneinfo
from datetime import datetime, time


def parse_hhmm(value: str) -> time:
    hours, minutes = value.split(":")
    return time(int(hours), int(minutes))


def in_quiet_hours(local: time, start: time, end: time) -> bool:
    """Whether ``local`` lies in the window [start, end), which may wrap midnight.

    22:00-06:00 covers 23:30 and 05:59 but not 06:00. A window whose start equals its end is
    empty: "quiet from 08:00 to 08:00" more likely means a mistake than a day of silence.
    """
    if start <= end:
        return start <= local < end
    return local >= start or local < end


def local_time(now: datetime, timezone: str) -> time:
    """Wall-clock time in ``timezone`` (an IANA name); an unknown zone reads as UTC."""
    try:
        zone = zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        zone = zoneinfo.ZoneInfo("UTC")
    return now.astimezone(zone).time().replace(second=0, microsecond=0, tzinfo=None)


def suppression(
    *,
    enabled: bool,
    channel: str,
    channels_in_plan: tuple[str, ...] | frozenset[str],
    quiet_start: str | None,
    quiet_end: str | None,
    timezone: str,
    now: datetime,
    ends_a_delivered_alert: bool = False,
) -> str | None:
    """Why an alert to this provider is not sent now, or None when it is sent.

    A recovery whose outage alert went out is sent even in quiet hours: whoever heard of the
    outage must hear of its end (a PagerDuty incident would otherwise stay open).
    """
    if not enabled:
        return "provider disabled"
    if channel not in channels_in_plan:
        return f"{channel} is not in the owner's plan"
    if quiet_start and quiet_end and not ends_a_delivered_alert:
        local = local_time(now, timezone)
        if in_quiet_hours(local, parse_hhmm(quiet_start), parse_hhmm(quiet_end)):
            return f"quiet hours {quiet_start}-{quiet_end} ({timezone})"
    return None
