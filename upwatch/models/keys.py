"""The numbers check rows use for a monitor and a region, as subqueries by their ids: a
query about a monitor's results names the monitor as the API does and the database looks its
number up through a unique index."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import ScalarSelect, Select, select

from upwatch.models.monitor import Monitor, Region


def monitor_number(monitor_id: Any) -> ScalarSelect[int | None]:
    """The number of the monitor ``monitor_id`` (a value or a column)."""
    return select(Monitor.number).where(Monitor.id == monitor_id).scalar_subquery()


def monitor_numbers(monitor_ids: Collection[str] | Select[Any]) -> Select[int | None]:
    """The numbers of ``monitor_ids`` (values or a query of ids), for ``IN``."""
    return select(Monitor.number).where(Monitor.id.in_(monitor_ids))


def region_number(region_id: Any) -> ScalarSelect[int | None]:
    """The number of the region ``region_id`` (a value or a column)."""
    return select(Region.number).where(Region.id == region_id).scalar_subquery()
