"""Reading ``Retry-After`` (RFC 9110 §10.2.3): delay seconds or an HTTP-date against a given
clock; anything else asks for nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from upwatch.kit.net import retry_after_seconds

NOW = datetime(2026, 11, 27, 4, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("120", 120.0),
        (" 0 ", 0.0),
        ("Fri, 27 Nov 2026 04:02:00 GMT", 120.0),
        ("Friday, 27-Nov-26 04:01:00 GMT", 60.0),  # the obsolete RFC 850 form
        ("Fri Nov 27 04:00:30 2026", 30.0),  # asctime
        ("Fri, 27 Nov 2026 03:00:00 GMT", 0.0),  # already past: no wait
    ],
)
def test_seconds_and_http_dates_are_read_as_a_wait_from_now(header: str, seconds: float) -> None:
    assert retry_after_seconds(header, NOW) == seconds


@pytest.mark.parametrize("header", [None, "", "soon", "-5", "1.5", "12 s", "٣", "Fri, 99 Foo"])
def test_anything_else_asks_for_no_particular_wait(header: str | None) -> None:
    assert retry_after_seconds(header, NOW) is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_no_header_value_breaks_the_reader(header: str) -> None:
    seconds = retry_after_seconds(header, NOW)
    assert seconds is None or seconds >= 0
