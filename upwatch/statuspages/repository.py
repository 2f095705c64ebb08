"""Every query of status pages, their components and messages, and what the public page
reads: monitor states, day counts and incidents of the page's monitors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import String, cast, func, or_, select, update

from upwatch.callers.access import ProjectScopedRepository
from upwatch.kit.repository import Listed
from upwatch.models import (
    DailyAggregate,
    Incident,
    Monitor,
    StatusMessage,
    StatusPage,
    StatusPageComponent,
    StatusPageGroup,
    StatusPageSubscriber,
)


class StatusPageRepository(ProjectScopedRepository[StatusPage]):
    model = StatusPage
    order = (StatusPage.created_at, StatusPage.id)
    not_found = "no such status page"

    async def by_slug(self, slug: str) -> StatusPage | None:
        return await self.session.scalar(select(StatusPage).where(StatusPage.slug == slug))

    async def by_domain(self, domain: str) -> StatusPage | None:
        return await self.session.scalar(
            select(StatusPage).where(StatusPage.custom_domain == domain.lower())
        )

    async def taken(self, slug: str | None, domain: str | None, besides: str | None) -> set[str]:
        """Which of ``slug`` and ``domain`` another page (not ``besides``) already has:
        the API field names, ``slug`` and ``customDomain``."""
        conditions = []
        if slug is not None:
            conditions.append(StatusPage.slug == slug)
        if domain is not None:
            conditions.append(StatusPage.custom_domain == domain)
        if not conditions:
            return set()
        query = select(StatusPage.slug, StatusPage.custom_domain).where(or_(*conditions))
        if besides is not None:
            query = query.where(StatusPage.id != besides)
        taken: set[str] = set()
        for other_slug, other_domain in (await self.session.execute(query)).all():
            if slug is not None and other_slug == slug:
                taken.add("slug")
            if domain is not None and other_domain == domain:
                taken.add("customDomain")
        return taken

    # ---- components ----

    async def components(self, page_ids: Sequence[str]) -> dict[str, list[StatusPageComponent]]:
        """Each page's components in their order (ties by creation)."""
        found: dict[str, list[StatusPageComponent]] = {p: [] for p in page_ids}
        if page_ids:
            rows = await self.session.scalars(
                select(StatusPageComponent)
                .where(StatusPageComponent.status_page_id.in_(page_ids))
                .order_by(
                    StatusPageComponent.position,
                    StatusPageComponent.created_at,
                    StatusPageComponent.id,
                )
            )
            for component in rows:
                found[component.status_page_id].append(component)
        return found

    async def component(self, page_id: str, component_id: str) -> StatusPageComponent | None:
        return await self.session.scalar(
            select(StatusPageComponent).where(
                StatusPageComponent.id == component_id,
                StatusPageComponent.status_page_id == page_id,
            )
        )

    async def shows(self, page_id: str, monitor_id: str) -> bool:
        found = await self.session.scalar(
            select(StatusPageComponent.id).where(
                StatusPageComponent.status_page_id == page_id,
                StatusPageComponent.monitor_id == monitor_id,
            )
        )
        return found is not None

    async def last_position(self, page_id: str) -> int | None:
        """The highest order of the page's components and groups (one sequence on the page)."""
        components = await self.session.scalar(
            select(func.max(StatusPageComponent.position)).where(
                StatusPageComponent.status_page_id == page_id
            )
        )
        groups = await self.session.scalar(
            select(func.max(StatusPageGroup.position)).where(
                StatusPageGroup.status_page_id == page_id
            )
        )
        found = [int(v) for v in (components, groups) if v is not None]
        return max(found) if found else None

    # ---- groups ----

    async def groups(self, page_ids: Sequence[str]) -> dict[str, list[StatusPageGroup]]:
        """Each page's component groups in their order (ties by creation)."""
        found: dict[str, list[StatusPageGroup]] = {p: [] for p in page_ids}
        if page_ids:
            rows = await self.session.scalars(
                select(StatusPageGroup)
                .where(StatusPageGroup.status_page_id.in_(page_ids))
                .order_by(StatusPageGroup.position, StatusPageGroup.created_at, StatusPageGroup.id)
            )
            for group in rows:
                found[group.status_page_id].append(group)
        return found

    async def group(self, page_id: str, group_id: str) -> StatusPageGroup | None:
        return await self.session.scalar(
            select(StatusPageGroup).where(
                StatusPageGroup.id == group_id, StatusPageGroup.status_page_id == page_id
            )
        )

    async def ungroup(self, group_id: str) -> None:
        """Its components leave the group (before it goes: rows loaded in this session must
        not keep a group id the database clears behind them)."""
        await self.session.execute(
            update(StatusPageComponent)
            .where(StatusPageComponent.group_id == group_id)
            .values(group_id=None)
            .execution_options(synchronize_session="fetch")
        )

    async def group_named(self, page_id: str, name: str) -> StatusPageGroup | None:
        return await self.session.scalar(
            select(StatusPageGroup).where(
                StatusPageGroup.status_page_id == page_id, StatusPageGroup.name == name
            )
        )

    # ---- messages ----

    async def messages(self, page_id: str, limit: int, offset: int) -> Listed[StatusMessage]:
        """The page's messages, newest first."""
        query = select(StatusMessage).where(StatusMessage.status_page_id == page_id)
        return await self.page_of(query.order_by(StatusMessage.id.desc()), limit, offset)

    async def current_messages(self, page_ids: Sequence[str]) -> dict[str, StatusMessage]:
        """Each page's newest message, where it is not empty (an empty one clears)."""
        if not page_ids:
            return {}
        newest = (
            select(func.max(StatusMessage.id))
            .where(StatusMessage.status_page_id.in_(page_ids))
            .group_by(StatusMessage.status_page_id)
        )
        rows = await self.session.scalars(
            select(StatusMessage).where(StatusMessage.id.in_(newest), StatusMessage.message != "")
        )
        return {m.status_page_id: m for m in rows}

    # ---- subscribers ----

    async def subscribers(
        self, page_id: str, limit: int, offset: int
    ) -> Listed[StatusPageSubscriber]:
        query = select(StatusPageSubscriber).where(StatusPageSubscriber.status_page_id == page_id)
        order = (StatusPageSubscriber.created_at, StatusPageSubscriber.id)
        return await self.page_of(query.order_by(*order), limit, offset)

    async def subscriber(self, page_id: str, subscriber_id: str) -> StatusPageSubscriber | None:
        return await self.session.scalar(
            select(StatusPageSubscriber).where(
                StatusPageSubscriber.id == subscriber_id,
                StatusPageSubscriber.status_page_id == page_id,
            )
        )

    async def subscriber_by_email(self, page_id: str, email: str) -> StatusPageSubscriber | None:
        return await self.session.scalar(
            select(StatusPageSubscriber).where(
                StatusPageSubscriber.status_page_id == page_id, StatusPageSubscriber.email == email
            )
        )

    async def public_pages_showing(self, monitor_id: str) -> list[tuple[StatusPage, str]]:
        """Public pages with a component of the monitor, each with those components' names."""
        rows = await self.session.execute(
            select(StatusPage, StatusPageComponent.name)
            .join(StatusPageComponent, StatusPageComponent.status_page_id == StatusPage.id)
            .where(StatusPageComponent.monitor_id == monitor_id, StatusPage.is_public)
            .order_by(StatusPage.id, StatusPageComponent.position)
        )
        found: dict[str, tuple[StatusPage, list[str]]] = {}
        for page, name in rows.all():
            found.setdefault(page.id, (page, []))[1].append(name)
        return [(page, ", ".join(names)) for page, names in found.values()]

    # ---- what the page shows ----

    async def monitors(self, monitor_ids: Sequence[str]) -> dict[str, Monitor]:
        return await self.by_ids(Monitor, monitor_ids)

    async def change_marks(
        self, page_id: str
    ) -> tuple[StatusPage | None, list[tuple[str, Monitor]], tuple[int, datetime | None]]:
        """What tells whether a page's public answer may be out of date, read without building
        it: the page, its components' monitors, and the count and newest change of its
        project's incidents (an incident opened, changed, resolved or deleted moves them)."""
        page = await self.session.get(StatusPage, page_id, populate_existing=True)
        if page is None:
            return None, [], (0, None)
        rows = await self.session.execute(
            select(StatusPageComponent.id, Monitor)
            .join(Monitor, Monitor.id == StatusPageComponent.monitor_id)
            .where(StatusPageComponent.status_page_id == page_id)
            .order_by(StatusPageComponent.id)
        )
        counted = (
            await self.session.execute(
                select(func.count(Incident.id), func.max(Incident.updated_at)).where(
                    Incident.project_id == page.project_id
                )
            )
        ).one()
        return page, [(c, m) for c, m in rows.all()], (int(counted[0]), counted[1])

    async def day_counts(
        self, monitor_ids: Sequence[str], first_day: str
    ) -> list[tuple[str, str, int, int, int, int]]:
        """(monitor, day, total, up, degraded, down) from ``first_day`` on, summed over
        regions in SQL: the aggregates, never raw results."""
        if not monitor_ids:
            return []
        rows = await self.session.execute(
            select(
                DailyAggregate.monitor_id,
                DailyAggregate.day,
                func.sum(DailyAggregate.total),
                func.sum(DailyAggregate.up),
                func.sum(DailyAggregate.degraded),
                func.sum(DailyAggregate.down),
            )
            .where(DailyAggregate.monitor_id.in_(monitor_ids), DailyAggregate.day >= first_day)
            .group_by(DailyAggregate.monitor_id, DailyAggregate.day)
        )
        return [(m, d, int(t), int(u), int(g), int(w)) for m, d, t, u, g, w in rows.all()]

    async def incidents(
        self, project_id: str, monitor_ids: Sequence[str], resolved_since: datetime
    ) -> Sequence[Incident]:
        """The project's incidents that are open or resolved since ``resolved_since``, newest
        first: those on these monitors and those placed on status pages (which page and
        component they are placed on, the caller sorts out)."""
        placed = or_(
            cast(Incident.status_page_ids, String) != "[]",
            cast(Incident.component_ids, String) != "[]",
        )
        rows = await self.session.scalars(
            select(Incident)
            .where(
                Incident.project_id == project_id,
                or_(Incident.monitor_id.in_(monitor_ids), placed) if monitor_ids else placed,
                or_(Incident.resolved_at.is_(None), Incident.resolved_at >= resolved_since),
            )
            .order_by(Incident.started_at.desc(), Incident.id)
        )
        return rows.all()
