"""The base of a repository: its session, and the statement shapes every table's repository
repeats (add a row, delete one, count, one page of a list, a conditional update).

The kit names no model (tests/test_architecture.py): a row, a model or a statement comes in as
a parameter.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from sqlalchemy import Select, Update, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.kit.db import IdMixin

T = TypeVar("T")
Item = TypeVar("Item", covariant=True)

Keyed = TypeVar("Keyed", bound=IdMixin)


class Listed(NamedTuple, Generic[Item]):
    """One page of a list and how many rows the whole list has (``X-Total-Count``)."""

    rows: Sequence[Item]
    total: int


class Repository:
    """Statements on the rows of one session; services never commit (the request does)."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, row: T) -> T:
        """Insert ``row``; the flush reads back its defaults and surfaces constraint errors
        here, in the call that caused them."""
        self.session.add(row)
        await self.session.flush()
        return row

    async def delete(self, row: Any) -> None:
        await self.session.delete(row)
        await self.session.flush()

    async def rows_of(self, query: Select[T]) -> Sequence[T]:
        """Every row ``query`` selects."""
        return (await self.session.scalars(query)).all()

    async def count_of(self, query: Select[Any]) -> int:
        """How many rows ``query`` selects (its order is dropped: it changes no count)."""
        total = await self.session.scalar(
            select(func.count()).select_from(query.order_by(None).subquery())
        )
        return int(total or 0)

    async def page_of(self, query: Select[T], limit: int, offset: int) -> Listed[T]:
        """One page of ``query`` (ordered by a unique column last, so pages never overlap)
        with the total of all it selects."""
        total = await self.count_of(query)
        rows = await self.session.scalars(query.limit(limit).offset(offset))
        return Listed(rows.all(), total)

    async def by_ids(self, model: type[Keyed], ids: Collection[str]) -> dict[str, Keyed]:
        """The rows of ``model`` with these ids, by id (an unknown id is left out)."""
        if not ids:
            return {}
        rows = await self.session.scalars(select(model).where(model.id.in_(ids)))
        return {row.id: row for row in rows}

    async def changed_one(self, statement: Update) -> bool:
        """Run a conditional UPDATE; whether it changed exactly one row, so of two
        concurrent requests on the same condition exactly one wins."""
        result = await self.session.execute(statement)
        return getattr(result, "rowcount", 0) == 1
