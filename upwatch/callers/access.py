"""Rows that belong to a project, and the one rule for who may see them.

A domain's repository of such rows derives from ``ProjectScopedRepository``, naming its model,
its list order and its "not found" wording; ``get_visible`` and ``list_visible`` then apply the
access rule, written here once (on the membership table, so the base needs no domain):

- a list shows the rows of the projects the caller belongs to (``readable_project_ids``);
- a row opened by id is shown to members of its project and to administrators
  (``may_open``), and a 404 to everyone else, so another tenant's rows are never revealed.

An API key sees only its own project, in lists and by id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Protocol, TypeVar

from fastapi import Depends
from sqlalchemy import ColumnElement, Select, select, true
from sqlalchemy.orm import InstrumentedAttribute, Mapped

from upwatch.kit.errors import NotFound
from upwatch.kit.pagination import IdFilter, Page, PageParams
from upwatch.kit.repository import Listed, Repository
from upwatch.models import ProjectMember, User


def listed_memberships(caller: User) -> ColumnElement[bool]:
    """The membership rows of the projects ``caller`` lists: its own (an owner has one too),
    and for an API key only the one of its project (the key acts for the project's owner,
    who may belong to other tenants' projects as well)."""
    condition = ProjectMember.user_id == caller.id
    if caller.grant is not None:
        condition = condition & (ProjectMember.project_id == caller.grant.project_id)
    return condition


def readable_project_ids(caller: User) -> Select[str]:
    """The ids of the projects ``caller`` lists: those it belongs to (an owner has a membership
    row too). Every list of project-scoped rows filters by this one subquery.

    Administrators are no exception here: their lists show only their own projects, while
    ``may_open`` lets them reach any project by id. A list over every tenant would be a
    different feature (an admin view), not a wider member list. An API key lists its own
    project only."""
    return select(ProjectMember.project_id).where(listed_memberships(caller))


def may_open(caller: User, project_id: ColumnElement[str] | Mapped[str]) -> ColumnElement[bool]:
    """Whether ``caller`` may open by id a row of the project ``project_id``: members their
    projects, administrators any project (unlike lists); an API key only in its project."""
    if caller.is_admin:  # never true for an API key
        return true()
    return project_id.in_(readable_project_ids(caller))


class ProjectScoped(Protocol):
    """A model whose rows belong to one project."""

    id: Mapped[str]
    project_id: Mapped[str]


Row = TypeVar("Row", bound=ProjectScoped)
Item = TypeVar("Item", covariant=True)
Ordering = ColumnElement[Any] | InstrumentedAttribute[Any]


class ListsVisible(Protocol[Item]):
    """What ``ProjectPage`` reads a page from: a ``ProjectScopedRepository``."""

    async def list_visible(
        self, caller: User, limit: int, offset: int, *, project_id: str | None
    ) -> Listed[Item]: ...


class ProjectScopedRepository(Repository, Generic[Row]):
    """Queries of one project-scoped model that know who may see which row.

    A domain names ``model``, ``order`` (its lists' order, ending with a unique column so
    pages never overlap) and ``not_found`` (the problem's ``detail`` for a missing or
    unseen row: both read the same)."""

    model: type[Row]
    order: tuple[Ordering, ...]
    not_found: str

    async def get(self, row_id: str) -> Row | None:
        """A row by id with no access check: for work no caller asked for."""
        return await self.session.get(self.model, row_id)

    def readable(self, caller: User) -> ColumnElement[bool]:
        """The rows ``caller`` lists, as a condition for queries of other shapes."""
        return self.model.project_id.in_(readable_project_ids(caller))

    async def get_visible(self, caller: User, row_id: str) -> Row:
        """The row if ``caller`` may open its project, else 404 with the domain's wording."""
        found = await self.session.scalar(
            select(self.model).where(
                self.model.id == row_id, may_open(caller, self.model.project_id)
            )
        )
        if found is None:
            raise NotFound(self.not_found)
        return found

    async def list_visible(
        self,
        caller: User,
        limit: int,
        offset: int,
        *,
        project_id: str | None = None,
        where: Iterable[ColumnElement[bool]] = (),
    ) -> Listed[Row]:
        """One page of the rows ``caller`` lists, in ``order``, narrowed to ``project_id`` and
        by ``where``, with the total of the whole list."""
        query = select(self.model).where(self.readable(caller), *where)
        if project_id is not None:
            query = query.where(self.model.project_id == project_id)
        return await self.page_of(query.order_by(*self.order), limit, offset)


@dataclass(frozen=True)
class ProjectPage(Page):
    """A page of a list of project rows, narrowed to one project by ``projectId``."""

    project_id: str | None

    async def of(self, repository: ListsVisible[Item], caller: User) -> Sequence[Item]:
        """The rows of this page the caller lists; their total goes to ``X-Total-Count``."""
        listed = await repository.list_visible(
            caller, self.limit, self.offset, project_id=self.project_id
        )
        self.total(listed.total)
        return listed.rows


def _project_page(page: PageParams, projectId: IdFilter = None) -> ProjectPage:  # noqa: N803
    return ProjectPage(page.limit, page.offset, page.response, projectId)


# Query parameters ``limit``, ``offset`` and ``projectId``, in that order.
ProjectPageParams = Annotated[ProjectPage, Depends(_project_page)]
