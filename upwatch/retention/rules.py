"""When data expires: pure functions of the clock and the plan, tested on their own.

Data goes in weekly batches, each announced seven days ahead: a batch's expiry is a Monday,
00:00 UTC, and takes the rows older than the plan's retention at that moment. Data is thus
kept at least ``retentionDays`` and at most a week longer; an owner gets one e-mail a week,
not one a day.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

DATA_TYPES = ("check_results", "monitoring_data", "alert_history", "incident_data")
NOTICE_DAYS = 7
# Daily aggregates (status-page bars, 90-day statistics) outlive raw data on every plan.
AGGREGATE_DAYS = 90
# A retention this long (a self-hosted plan's "unlimited") expires nothing.
NEVER_DAYS = 100 * 366
EXPIRY_WEEKDAY = 0  # Monday


def midnight(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def next_expiry(now: datetime) -> datetime:
    """The expiry of the next batch announced at ``now``: the first Monday at least seven
    days ahead of today (a run late in the week waits for the Monday after)."""
    earliest = now.astimezone(UTC).date() + timedelta(days=NOTICE_DAYS)
    return midnight(earliest + timedelta(days=(EXPIRY_WEEKDAY - earliest.weekday()) % 7))


def expires(retention_days: int) -> bool:
    return retention_days < NEVER_DAYS


def cutoff(expiry: datetime, retention_days: int) -> datetime:
    """Rows older than this go at ``expiry``."""
    return expiry - timedelta(days=retention_days)


def aggregate_cutoff_day(today: date, retention_days: int) -> date | None:
    """Daily aggregates of days before this go: kept 90 days, or the plan's retention where
    that is longer; None keeps them all."""
    if not expires(retention_days):
        return None
    return today - timedelta(days=max(AGGREGATE_DAYS, retention_days))


def purge_cutoff(
    notice_cutoff: datetime, expiry: datetime, notice_days: int, retention_days: int
) -> datetime:
    """What a due notice deletes: its rows, unless the plan changed since it was made; then
    never more than the plan allows now (an upgrade keeps what the new plan retains)."""
    if notice_days == retention_days:
        return notice_cutoff
    if not expires(retention_days):
        return datetime.min.replace(tzinfo=UTC)
    return min(notice_cutoff, cutoff(expiry, retention_days))


def storage_cutoff_day(
    rows_per_day: list[tuple[date, int]], row_bytes: int, limit_bytes: int
) -> date | None:
    """With storage over the plan's limit, the first day whose raw results (newest first)
    still fit in it; the days before go early with the next batch. None when all fit."""
    used = 0
    for day, rows in sorted(rows_per_day, reverse=True):
        used += rows * row_bytes
        if used > limit_bytes:
            return day + timedelta(days=1)
    return None


def retry_count(earlier_attempts: int, attempts: int, sent: bool) -> int:
    """Failed delivery attempts of a notice's e-mails: the sent one's last attempt is no
    failure."""
    return earlier_attempts + (attempts - 1 if sent and attempts else attempts)
