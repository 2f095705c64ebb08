"""When data expires: the pure rules behind the retention job."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from upwatch.kit.plans import UNLIMITED
from upwatch.retention import rules

pytestmark = pytest.mark.db_independent

# Hypothesis takes naive bounds and adds the zone itself.
moments = st.datetimes(
    min_value=datetime(2020, 1, 1),  # noqa: DTZ001
    max_value=datetime(2040, 1, 1),  # noqa: DTZ001
    timezones=st.just(UTC),
)


@given(moments)
def test_the_next_batch_expires_on_a_monday_midnight_seven_to_thirteen_days_ahead(
    now: datetime,
) -> None:
    expiry = rules.next_expiry(now)
    assert expiry.weekday() == 0
    assert (expiry.hour, expiry.minute, expiry.second, expiry.microsecond) == (0, 0, 0, 0)
    assert now + timedelta(days=6) < expiry <= now + timedelta(days=14)
    assert (expiry.date() - now.date()).days in range(7, 14)


def test_a_run_on_monday_announces_the_monday_after_and_a_tuesday_run_the_one_after_that() -> None:
    monday = datetime(2026, 11, 30, 0, 30, tzinfo=UTC)
    assert rules.next_expiry(monday) == datetime(2026, 12, 7, tzinfo=UTC)
    assert rules.next_expiry(monday + timedelta(days=1)) == datetime(2026, 12, 14, tzinfo=UTC)


@given(moments, st.integers(min_value=1, max_value=3650))
def test_a_batch_takes_only_rows_older_than_the_plans_retention_at_its_expiry(
    now: datetime, days: int
) -> None:
    expiry = rules.next_expiry(now)
    assert expiry - rules.cutoff(expiry, days) == timedelta(days=days)


def test_an_unlimited_retention_expires_nothing_and_keeps_every_aggregate() -> None:
    assert not rules.expires(UNLIMITED)
    assert rules.aggregate_cutoff_day(date(2026, 11, 30), UNLIMITED) is None


@pytest.mark.parametrize(("days", "kept"), [(30, 90), (90, 90), (365, 365)])
def test_daily_aggregates_are_kept_90_days_or_the_plans_retention_if_longer(
    days: int, kept: int
) -> None:
    today = date(2026, 11, 30)
    assert rules.aggregate_cutoff_day(today, days) == today - timedelta(days=kept)


def test_a_due_notice_deletes_its_rows_unless_an_upgrade_since_keeps_them() -> None:
    expiry = datetime(2026, 12, 7, tzinfo=UTC)
    made_for_30 = rules.cutoff(expiry, 30)
    assert rules.purge_cutoff(made_for_30, expiry, 30, 30) == made_for_30
    assert rules.purge_cutoff(made_for_30, expiry, 30, 365) == rules.cutoff(expiry, 365)
    # A notice moved forward by the storage limit still deletes what it announced.
    early = made_for_30 + timedelta(days=10)
    assert rules.purge_cutoff(early, expiry, 30, 30) == early
    assert rules.purge_cutoff(made_for_30, expiry, 30, UNLIMITED) < datetime(1, 1, 2, tzinfo=UTC)


def test_over_the_storage_limit_the_oldest_days_go_first() -> None:
    days = [(date(2026, 11, d), 1000) for d in range(1, 11)]  # 1,000 rows a day
    assert rules.storage_cutoff_day(days, row_bytes=100, limit_bytes=10 * 100_000) is None
    # Room for 3.5 days of rows: the newest three fit, the 7th and before go.
    assert rules.storage_cutoff_day(days, row_bytes=100, limit_bytes=350_000) == date(2026, 11, 8)
    assert rules.storage_cutoff_day(days, row_bytes=100, limit_bytes=0) == date(2026, 11, 11)


@pytest.mark.parametrize(
    ("earlier", "attempts", "sent", "count"),
    [(0, 0, False, 0), (0, 1, True, 0), (0, 3, False, 3), (0, 3, True, 2), (30, 2, True, 31)],
)
def test_retry_count_is_the_failed_delivery_attempts(
    earlier: int, attempts: int, sent: bool, count: int
) -> None:
    assert rules.retry_count(earlier, attempts, sent) == count
