"""Every statement on the subscriber outbox: notices (one per page and change, written in
the change's transaction), their batched expansion into deliveries, and the webhook and Slack
deliveries' claims and attempts. E-mail notices go to the mail outbox (``mail/``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, delete, exists, func, insert, or_, select, update

from upwatch.kit.repository import Repository
from upwatch.models import (
    Incident,
    MailMessage,
    StatusPage,
    StatusPageComponent,
    StatusPageSubscriber,
    SubscriberDelivery,
    SubscriberNotice,
)


class Follower(NamedTuple):
    """What the fan-out reads of a confirmed subscriber."""

    id: str
    kind: str
    email: str | None
    component_ids: list[str] | None


class NoticeRepository(Repository):
    # ---- written in the change's transaction ----

    async def has_followers(self, page_id: str) -> bool:
        return bool(
            await self.session.scalar(
                select(
                    exists().where(
                        StatusPageSubscriber.status_page_id == page_id,
                        StatusPageSubscriber.confirmed_at.is_not(None),
                    )
                )
            )
        )

    async def _components_of_public_pages(
        self, project_id: str, *which: ColumnElement[bool]
    ) -> dict[str, tuple[StatusPage, list[str], list[str]]]:
        """The project's public pages with components matching ``which``, each with those
        components' ids and names in the page's order."""
        query = (
            select(StatusPage, StatusPageComponent.id, StatusPageComponent.name)
            .join(StatusPageComponent, StatusPageComponent.status_page_id == StatusPage.id)
            .where(StatusPage.project_id == project_id, StatusPage.is_public, *which)
            .order_by(StatusPage.id, StatusPageComponent.position, StatusPageComponent.id)
        )
        found: dict[str, tuple[StatusPage, list[str], list[str]]] = {}
        for page, component_id, name in (await self.session.execute(query)).all():
            entry = found.setdefault(page.id, (page, [], []))
            entry[1].append(component_id)
            entry[2].append(name)
        return found

    async def public_pages_of_monitors(
        self, project_id: str, monitor_ids: Sequence[str] | None
    ) -> list[tuple[StatusPage, list[str], list[str]]]:
        """The project's public pages with a component of these monitors (None: any), each
        with those components' ids and names in the page's order."""
        which = () if monitor_ids is None else (StatusPageComponent.monitor_id.in_(monitor_ids),)
        return list((await self._components_of_public_pages(project_id, *which)).values())

    async def public_pages_of_incident(
        self, incident: Incident
    ) -> list[tuple[StatusPage, list[str] | None, list[str]]]:
        """The project's public pages that show ``incident``: through its monitor's components,
        the components it was placed on, or placed on the page as a whole (then it touches
        every component: None). Each with the components' ids and names in the page's order."""
        shown: list[ColumnElement[bool]] = []
        if incident.monitor_id is not None:
            shown.append(StatusPageComponent.monitor_id == incident.monitor_id)
        if incident.component_ids:
            shown.append(StatusPageComponent.id.in_(incident.component_ids))
        found: dict[str, tuple[StatusPage, list[str] | None, list[str]]] = {}
        if shown:
            found.update(await self._components_of_public_pages(incident.project_id, or_(*shown)))
        if incident.status_page_ids:
            pages = await self.session.scalars(
                select(StatusPage).where(
                    StatusPage.project_id == incident.project_id,
                    StatusPage.is_public,
                    StatusPage.id.in_(incident.status_page_ids),
                )
            )
            for whole in pages:
                found[whole.id] = (whole, None, found[whole.id][2] if whole.id in found else [])
        return list(found.values())

    async def forget_window(self, window_id: str) -> None:
        """Drop a window's notices not expanded yet (the window changed or went)."""
        await self.session.execute(
            delete(SubscriberNotice).where(
                SubscriberNotice.maintenance_window_id == window_id,
                SubscriberNotice.done.is_(False),
                SubscriberNotice.cursor.is_(None),
            )
        )

    # ---- the fan-out ----

    async def due_notices(self, now: datetime, limit: int) -> list[tuple[str, datetime]]:
        rows = await self.session.execute(
            select(SubscriberNotice.id, SubscriberNotice.due_at)
            .where(SubscriberNotice.done.is_(False), SubscriberNotice.due_at <= now)
            .order_by(SubscriberNotice.due_at, SubscriberNotice.id)
            .limit(limit)
        )
        return [(notice_id, due_at) for notice_id, due_at in rows.all()]

    async def waiting_notices(self, now: datetime) -> int:
        """Notices due and not expanded yet (readiness: the fan-out has work)."""
        return int(
            await self.session.scalar(
                select(func.count()).where(
                    SubscriberNotice.done.is_(False), SubscriberNotice.due_at <= now
                )
            )
            or 0
        )

    async def claim(self, notice_id: str, due_at: datetime, hidden_until: datetime) -> bool:
        """Only one claim on a given due time wins; the claim lapses at ``hidden_until``."""
        return await self.changed_one(
            update(SubscriberNotice)
            .where(
                SubscriberNotice.id == notice_id,
                SubscriberNotice.done.is_(False),
                SubscriberNotice.due_at == due_at,
            )
            .values(due_at=hidden_until)
        )

    async def notice(self, notice_id: str) -> SubscriberNotice | None:
        return await self.session.get(SubscriberNotice, notice_id)

    async def followers_after(self, page_id: str, after: str | None, limit: int) -> list[Follower]:
        """The page's next ``limit`` confirmed subscribers by id (keyset: no OFFSET scan)."""
        query = select(
            StatusPageSubscriber.id,
            StatusPageSubscriber.kind,
            StatusPageSubscriber.email,
            StatusPageSubscriber.component_ids,
        ).where(
            StatusPageSubscriber.status_page_id == page_id,
            StatusPageSubscriber.confirmed_at.is_not(None),
        )
        if after is not None:
            query = query.where(StatusPageSubscriber.id > after)
        rows = await self.session.execute(query.order_by(StatusPageSubscriber.id).limit(limit))
        return [Follower(*row) for row in rows.all()]

    async def add_mail(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Mail outbox rows in one executemany (the columns' Python defaults fill ids)."""
        if rows:
            await self.session.execute(insert(MailMessage), list(rows))

    async def add_deliveries(self, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows:
            await self.session.execute(insert(SubscriberDelivery), list(rows))

    async def advance(
        self,
        notice_id: str,
        after: str | None,
        cursor: str | None,
        delivered: int,
        done: bool,
        hidden_until: datetime,
        now: datetime,
    ) -> bool:
        """Move the cursor from ``after`` (in the batch's transaction); False when another
        process moved it meanwhile (its claim lapsed and was taken): the batch is void."""
        moved = (
            SubscriberNotice.cursor.is_(None)
            if after is None
            else (SubscriberNotice.cursor == after)
        )
        return await self.changed_one(
            update(SubscriberNotice)
            .where(SubscriberNotice.id == notice_id, SubscriberNotice.done.is_(False), moved)
            .values(
                cursor=cursor,
                delivered=SubscriberNotice.delivered + delivered,
                done=done,
                due_at=hidden_until,
                finished_at=now if done else None,
            )
        )

    # ---- webhook and Slack deliveries ----

    async def due_deliveries(self, now: datetime, limit: int) -> list[tuple[int, datetime]]:
        rows = await self.session.execute(
            select(SubscriberDelivery.id, SubscriberDelivery.next_attempt_at)
            .where(
                SubscriberDelivery.status == "pending",
                SubscriberDelivery.next_attempt_at <= now,
            )
            .order_by(SubscriberDelivery.next_attempt_at, SubscriberDelivery.id)
            .limit(limit)
        )
        return [(delivery_id, due_at) for delivery_id, due_at in rows.all()]

    async def claim_delivery(self, delivery_id: int, due_at: datetime, until: datetime) -> bool:
        return await self.changed_one(
            update(SubscriberDelivery)
            .where(
                SubscriberDelivery.id == delivery_id,
                SubscriberDelivery.status == "pending",
                SubscriberDelivery.next_attempt_at == due_at,
            )
            .values(next_attempt_at=until)
        )

    async def delivery(
        self, delivery_id: int
    ) -> tuple[SubscriberDelivery, SubscriberNotice, StatusPageSubscriber] | None:
        row = (
            await self.session.execute(
                select(SubscriberDelivery, SubscriberNotice, StatusPageSubscriber)
                .join(SubscriberNotice, SubscriberNotice.id == SubscriberDelivery.notice_id)
                .join(
                    StatusPageSubscriber,
                    StatusPageSubscriber.id == SubscriberDelivery.subscriber_id,
                )
                .where(SubscriberDelivery.id == delivery_id)
            )
        ).first()
        return None if row is None else (row[0], row[1], row[2])

    async def record(self, delivery_id: int, values: Mapping[str, Any]) -> None:
        await self.session.execute(
            update(SubscriberDelivery).where(SubscriberDelivery.id == delivery_id).values(**values)
        )
