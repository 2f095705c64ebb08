"""Column types that store a check result in few bytes and read back as the API's values.

A check row is written once per check and there are millions, so each value takes the
smallest integer that holds it (SQLite stores integers in 0-8 bytes as their size needs, and
the values 0 and 1 in none at all): a time as epoch milliseconds, a duration as whole
microseconds, a status as a small number. Queries keep comparing with datetimes, floats and
"up"/"down" strings: the types convert bound values the same way they convert stored ones.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import BigInteger, Integer, SmallInteger
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)

# Stored numbers of a result's status; never renumber (rows keep them).
STATUS_NUMBERS = {"up": 0, "down": 1, "degraded": 2}
_STATUS_NAMES = {number: name for name, number in STATUS_NUMBERS.items()}


def epoch_ms(moment: datetime) -> int:
    """``moment`` as whole milliseconds since 1970 (earlier sub-millisecond part dropped)."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime given to a UTC column")
    return (moment - EPOCH) // _MILLISECOND


def from_epoch_ms(value: int) -> datetime:
    return EPOCH + timedelta(milliseconds=value)


class EpochMillis(TypeDecorator[datetime]):
    """A UTC time as an integer number of milliseconds since 1970."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> int | None:
        return None if value is None else epoch_ms(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        # MIN/MAX on SQLite may come back as any integer-like value.
        return None if value is None else from_epoch_ms(int(value))


class Micros(TypeDecorator[float]):
    """Milliseconds (a float) stored as whole microseconds: three decimals are kept."""

    impl = Integer
    cache_ok = True

    def process_bind_param(self, value: float | None, dialect: Dialect) -> int | None:
        return None if value is None else round(value * 1000)

    def process_result_value(self, value: Any, dialect: Dialect) -> float | None:
        # AVG and SUM come back as floats or decimals; the unit is the same.
        return None if value is None else float(value) / 1000


class CheckStatus(TypeDecorator[str]):
    """ "up", "down" or "degraded" as 0, 1 or 2."""

    impl = SmallInteger
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> int | None:
        return None if value is None else STATUS_NUMBERS[value]

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else _STATUS_NAMES[int(value)]
