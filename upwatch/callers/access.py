"""Rows that belong to a project, and the one rule for who may see them.

A domain's repository of such rows derives from ``ProjectScopedRepository``, naming its model,
its list order and its "not found" wording; ``get_visible`` and ``list_visible`` then apply the
access rule, written here once (on the membership table, so the base needs no domain):

- a list shows the rows of the projects the caller belongs to (``readable_project_ids``);
- a row opened by id is shown to members of its project and to administrators
  (``may_open``), and a 404 to everyone else, so another tenant's rows are never revealed.

An API key sees only its own project, in lists and by id.

A project may require two-factor sign-in (its owner's setting, docs/two-factor-projects.md).
A person with no second factor then does not reach it: lists leave its rows out without an
error, and a row opened by id in it, or a list narrowed to it by ``projectId``, answers 403
``mfa-required-by-project`` (``refuse_without_second_factor``), to members and administrators
only: to anyone else it stays a 404. An API key acts for the owner and is never stopped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Protocol, TypeVar

from fastapi import Depends
from sqlalchemy import ColumnElement, Select, exists, false, not_, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute, Mapped

from upwatch.kit.errors import NotFound, TwoFactorRequired
from upwatch.kit.pagination import IdFilter, Page, PageParams
from upwatch.kit.repository import Listed, Repository
from upwatch.models import PasskeyCredential, Project, ProjectMember, User


def listed_memberships(caller: User) -> ColumnElement[bool]:
    """The membership rows of the projects ``caller`` lists: its own (an owner has one too),
    and for an API key only the one of its project (the key acts for the project's owner,
    who may belong to other tenants' projects as well)."""
    condition = ProjectMember.user_id == caller.id
    if caller.grant is not None:
        condition = condition & (ProjectMember.project_id == caller.grant.project_id)
    return condition


def two_factor_gate(caller: User) -> ColumnElement[bool] | None:
    """The condition (on ``Project``) a project must meet for ``caller`` to reach it under the
    two-factor rule; None when the rule cannot stop this caller (an API key, a person known
    to have a second factor), so its queries stay exactly as they were.

    A person whose second factor is not known yet is asked inside the same statement (an
    uncorrelated EXISTS the database evaluates once): the rule costs no query of its own."""
    if caller.grant is not None or caller.totp_enabled_at is not None or caller.second_factor:
        return None
    unlocked = Project.require_two_factor == false()
    if caller.second_factor is False:
        return unlocked
    return unlocked | exists().where(PasskeyCredential.user_id == caller.id)


def readable_project_ids(caller: User) -> Select[str]:
    """The ids of the projects ``caller`` lists: those it belongs to (an owner has a membership
    row too), less those that require two-factor sign-in from a person without a second
    factor. Every list of project-scoped rows filters by this one subquery.

    Administrators are no exception here: their lists show only their own projects, while
    ``may_open`` lets them reach any project by id. A list over every tenant would be a
    different feature (an admin view), not a wider member list. An API key lists its own
    project only."""
    query = select(ProjectMember.project_id).where(listed_memberships(caller))
    gate = two_factor_gate(caller)
    if gate is not None:
        # Never correlated: an outer query over projects must not turn this into a filter
        # on its own rows.
        query = (
            query.join(Project, Project.id == ProjectMember.project_id).where(gate).correlate(None)
        )
    return query


def opens_by_membership(
    caller: User, project_id: ColumnElement[str] | Mapped[str]
) -> ColumnElement[bool]:
    """Membership alone: members their projects, administrators any, a key its own."""
    if caller.is_admin:  # never true for an API key
        return true()
    return project_id.in_(select(ProjectMember.project_id).where(listed_memberships(caller)))


def may_open(caller: User, project_id: ColumnElement[str] | Mapped[str]) -> ColumnElement[bool]:
    """Whether ``caller`` may open by id a row of the project ``project_id``: members their
    projects, administrators any project (unlike lists); an API key only in its project; and
    a person without a second factor none that requires one (administrators included: the
    rule is about the account signed in, and theirs is an account like any other)."""
    if not caller.is_admin:
        return project_id.in_(readable_project_ids(caller))
    gate = two_factor_gate(caller)
    if gate is None:
        return true()
    return project_id.not_in(select(Project.id).where(not_(gate)).correlate(None))


async def lacks_second_factor(session: AsyncSession, caller: User) -> bool:
    """Whether the two-factor rule stops ``caller``: a person with neither TOTP nor a
    passkey. Asked once per request at most (kept on the caller, request state)."""
    if two_factor_gate(caller) is None:
        return False
    if caller.second_factor is None:
        found = await session.scalar(select(exists().where(PasskeyCredential.user_id == caller.id)))
        caller.second_factor = bool(found)
    return not caller.second_factor


async def refuse_without_second_factor(
    session: AsyncSession, caller: User, project_ids: str | Select[str]
) -> None:
    """403 ``mfa-required-by-project`` when what ``caller`` asked for was not found only
    because its project requires a second factor the caller lacks; nothing otherwise (the
    caller then answers 404, or an empty list). Only a member or an administrator is told:
    for anyone else the project stays unseen. Run on the way to a 404 or an empty list
    narrowed to a project, never on a found row, so a request that succeeds pays nothing."""
    gate = two_factor_gate(caller)
    if gate is None:
        return
    wanted = (
        Project.id == project_ids if isinstance(project_ids, str) else Project.id.in_(project_ids)
    )
    refused = await session.scalar(
        select(exists().where(wanted, not_(gate), opens_by_membership(caller, Project.id)))
    )
    if refused:
        raise TwoFactorRequired


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
            await refuse_without_second_factor(
                self.session, caller, select(self.model.project_id).where(self.model.id == row_id)
            )
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
        by ``where``, with the total of the whole list. Narrowed to a project that requires a
        second factor the caller lacks, it is a 403 rather than an empty list."""
        query = select(self.model).where(self.readable(caller), *where)
        if project_id is not None:
            query = query.where(self.model.project_id == project_id)
        listed = await self.page_of(query.order_by(*self.order), limit, offset)
        if project_id is not None and not listed.total:
            # Empty perhaps only because the project requires a second factor: say so.
            await refuse_without_second_factor(self.session, caller, project_id)
        return listed


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
