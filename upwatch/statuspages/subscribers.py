"""Visitors' e-mail subscriptions to a status page: double opt-in, incident notices through
the mail outbox, one-click unsubscribe (RFC 8058).

The links in these e-mails carry tokens derived from the page's id, the subscriber's id and
the service's signing key (HMAC-SHA256), one per purpose: nothing secret is stored, a token
fits one page, one subscriber and one purpose only, and deleting the subscriber voids its
confirmation link. A link that does not fit answers the same whether its page is missing,
private or someone else's, so a token for one page reveals nothing about another.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.config import Settings
from upwatch.kit.db import after_commit
from upwatch.kit.errors import NotFound, TooManyRequests
from upwatch.kit.languages import N_
from upwatch.models import (
    Incident,
    IncidentUpdate,
    MaintenanceWindow,
    StatusPage,
    StatusPageSubscriber,
    SubscriberNotice,
)
from upwatch.runtime import DomainService, uses
from upwatch.statuspages import rules
from upwatch.statuspages.outbox import NoticeRepository
from upwatch.statuspages.render import INCIDENT_WORDS, Words, human, iso
from upwatch.statuspages.repository import StatusPageRepository
from upwatch.statuspages.service import chosen_components

Purpose = Literal["confirm", "unsubscribe"]
Change = Literal["opened", "updated", "resolved"]
NOTICE_CATEGORY = "status_page_notice"
CONFIRM_CATEGORY = "status_page_subscription"


def _signed(key: str, message: str) -> str:
    digest = hmac.new(key.encode(), message.encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def link_token(key: str, purpose: Purpose, page_id: str, subscriber_id: str) -> str:
    return _signed(key, f"{purpose}:{page_id}:{subscriber_id}")


def _same(expected: str, given: str) -> bool:
    # As bytes: compare_digest raises on a str with characters beyond ASCII.
    return hmac.compare_digest(expected.encode(), given.encode())


def token_fits(key: str, purpose: Purpose, page_id: str, subscriber_id: str, token: str) -> bool:
    return _same(link_token(key, purpose, page_id, subscriber_id), token)


def earlier_token_fits(key: str, purpose: Purpose, subscriber_id: str, token: str) -> bool:
    """A token of the links mailed before tokens named their page. It names no page, so it
    counts only for a subscriber of the page in the link (the caller checks that)."""
    return _same(_signed(key, f"{purpose}:{subscriber_id}"), token)


class Links:
    def __init__(self, settings: Settings) -> None:
        self.public_url = settings.public_url
        self.key = settings.signing_key

    def page(self, page: StatusPage) -> str:
        return f"{self.public_url}/s/{page.slug}"

    def of(self, purpose: Purpose, page: StatusPage, subscriber_id: str) -> str:
        token = link_token(self.key, purpose, page.id, subscriber_id)
        return f"{self.page(page)}/{purpose}?id={subscriber_id}&token={token}"


class IncidentNotices:
    """Tells the subscribers of every public page that shows an incident's monitor when the
    incident opens, gets an update or resolves, and those of the pages that show a
    maintenance window's monitors when it is announced, starts and ends, in the page's words.

    The change's transaction gets one ``SubscriberNotice`` per page, never a row per
    subscriber: the fan-out (``fanout.py``) expands it after the commit, in batches."""

    def __init__(self, settings: Settings, wake: Callable[[], None] = lambda: None) -> None:
        self.links = Links(settings)
        # The fan-out of this process, woken after the commit (others find the row by polling).
        self.wake = wake

    async def _notice(
        self,
        session: AsyncSession,
        page: StatusPage,
        event: str,
        subject: str,
        text: str,
        payload: dict[str, Any],
        component_ids: list[str] | None,
        due_at: datetime,
        window_id: str | None = None,
    ) -> SubscriberNotice:
        notice = SubscriberNotice(
            status_page_id=page.id,
            maintenance_window_id=window_id,
            event=event,
            component_ids=component_ids,
            subject=subject[:300],
            text=text,
            payload={
                "page": {"id": page.id, "name": page.name, "url": self.links.page(page)},
                **payload,
            },
            due_at=due_at,
            done=False,
            delivered=0,
            created_at=due_at,
        )
        await NoticeRepository(session).add(notice)
        after_commit(session, self.wake)
        return notice

    async def incident_changed(
        self,
        session: AsyncSession,
        incident: Incident,
        update: IncidentUpdate,
        change: Change,
        machine_title: str | None,
    ) -> list[str]:
        """One notice per page with followers, in the caller's transaction; the ids of the
        pages that show the incident."""
        notices = NoticeRepository(session)
        shown_on = []
        for page, component_ids, component_names in await notices.public_pages_of_incident(
            incident
        ):
            shown_on.append(page.id)
            if not await notices.has_followers(page.id):
                continue
            names = ", ".join(component_names)
            # Said in the page's language (kit/languages.py); the payload's facts stay as
            # stored, for machines.
            said = Words(page.language)
            title = rules.public_title(
                incident.title, machine_title if incident.automatic else None, names, said.gettext
            )
            words = rules.public_update_words(
                update.automatic, update.status, update.message, names, said.gettext
            )
            subject = said.gettext(_INCIDENT_SUBJECTS[change]) % {"page": page.name, "title": title}
            stage = said.gettext(INCIDENT_WORDS.get(update.status, update.status))
            link = said.gettext("Follow it on %(link)s") % {"link": self.links.page(page)}
            status_line = said.gettext("Status: %(status)s") % {"status": stage}
            text = f"{title}\n{status_line}\n\n{words}\n\n{link}"
            payload = {
                "incident": {
                    "id": incident.id,
                    "title": title,
                    "status": update.status,
                    "severity": incident.severity,
                    "message": words,
                    "components": component_names,
                    "startedAt": iso(incident.started_at),
                    "resolvedAt": iso(incident.resolved_at) if incident.resolved_at else None,
                }
            }
            await self._notice(
                session,
                page,
                f"incident.{change}",
                subject,
                text,
                payload,
                component_ids,
                update.created_at,
            )
        return shown_on

    async def maintenance_changed(
        self,
        session: AsyncSession,
        window: MaintenanceWindow,
        monitor_ids: list[str] | None,
        occurrence: tuple[datetime, datetime] | None,
        announce: bool,
        now: datetime,
    ) -> None:
        """Write the window's notices: announced now (``announce``), started at its start and
        ended at its end (due then; one-off windows, and a recurring one's next occurrence).
        ``occurrence`` is the current or next one (None: none is left). The notices of an
        earlier version of the window not expanded yet are dropped first."""
        notices = NoticeRepository(session)
        await notices.forget_window(window.id)
        if occurrence is None:
            return
        start, end = occurrence
        for page, component_ids, component_names in await notices.public_pages_of_monitors(
            window.project_id, None if window.whole_project else monitor_ids
        ):
            touched = None if window.whole_project else component_ids
            names = ", ".join(component_names)
            facts = {
                "maintenance": {
                    "id": window.id,
                    "title": window.title,
                    "startsAt": iso(start),
                    "endsAt": iso(end),
                    "components": component_names,
                }
            }
            said = Words(page.language)
            when = said.gettext("%(start)s to %(end)s") % {
                "start": human(start, UTC, page.language),
                "end": human(end, UTC, page.language),
            }
            link = said.gettext("Follow it on %(link)s") % {"link": self.links.page(page)}
            steps = [("started", start), ("ended", end)]
            if announce:
                steps.insert(0, ("announced", now))
            for step, due in steps:
                if step != "announced" and due < now:
                    continue  # past already: nobody is told late
                facts_of = {"page": page.name, "title": window.title}
                subject = said.gettext(_MAINTENANCE_SUBJECTS[step]) % facts_of
                affects = said.gettext("Affects: %(names)s") % {"names": names}
                text = (
                    f"{window.title}\n{said.gettext(_MAINTENANCE_STEPS[step])}\n{when}\n"
                    f"{affects}\n\n{link}"
                )
                await self._notice(
                    session,
                    page,
                    f"maintenance.{step}",
                    subject,
                    text,
                    facts,
                    touched,
                    max(due, now),
                    window.id,
                )


_INCIDENT_SUBJECTS: Final = {
    "opened": N_("%(page)s: %(title)s"),
    "updated": N_("%(page)s: update on %(title)s"),
    "resolved": N_("%(page)s: resolved: %(title)s"),
}
_MAINTENANCE_SUBJECTS: Final = {
    "announced": N_("%(page)s: scheduled maintenance: %(title)s"),
    "started": N_("%(page)s: maintenance started: %(title)s"),
    "ended": N_("%(page)s: maintenance ended: %(title)s"),
}
_MAINTENANCE_STEPS: Final = {
    "announced": N_("Maintenance announced"),
    "started": N_("Maintenance started"),
    "ended": N_("Maintenance ended"),
}


class VisitorSubscriptions(DomainService):
    pages = uses(StatusPageRepository)

    async def _public_page(self, slug: str) -> StatusPage:
        page = await self.pages.by_slug(slug)
        if page is None or not page.is_public:
            raise NotFound("no such status page")
        return page

    async def subscribe(
        self, slug: str, email: str, client: str, component_ids: Sequence[str] | None = None
    ) -> None:
        """Mail a confirmation link, unless the address is confirmed already. The answer is
        the same either way, so nobody learns who subscribed; the components chosen replace
        those of an unconfirmed subscription, never a confirmed one's (which only its owner
        changes, by subscribing again after unsubscribing)."""
        throttles = self.runtime.throttles
        wait = await throttles.subscribe_client.take(client)
        if wait is not None:
            raise TooManyRequests("too many subscriptions from this address", retry_after=wait)
        page = await self._public_page(slug)
        key = f"{page.id}:{email}"
        wait = await throttles.subscribe_address.retry_after(key)
        if wait is not None:
            raise TooManyRequests("too many confirmation e-mails to this address", retry_after=wait)
        chosen = await chosen_components(self.pages, page.id, component_ids)
        subscriber = await self.pages.subscriber_by_email(page.id, email)
        if subscriber is None:
            subscriber = StatusPageSubscriber(
                status_page_id=page.id,
                kind="email",
                email=email,
                component_ids=chosen,
                created_at=self.runtime.clock.now(),
            )
            await self.pages.add(subscriber)
        elif subscriber.confirmed_at is not None:
            return
        else:
            subscriber.component_ids = chosen
        await throttles.subscribe_address.record(key)
        links = Links(self.runtime.settings)
        said = Words(page.language)
        await self.runtime.mailer.enqueue(
            self.session,
            to=email,
            subject=said.gettext("Confirm your subscription to %(page)s status updates")
            % {"page": page.name},
            body=said.gettext(
                "Someone, probably you, asked for e-mail about incidents on %(page)s's status "
                "page (%(link)s).\n\nConfirm with this link: %(confirm)s\n\nIf it was not you, "
                "ignore this message: nothing is sent without confirmation.\n"
            )
            % {
                "page": page.name,
                "link": links.page(page),
                "confirm": links.of("confirm", page, subscriber.id),
            },
            category=CONFIRM_CATEGORY,
        )

    async def _subscriber(
        self, slug: str, subscriber_id: str, token: str, purpose: Purpose, public_only: bool
    ) -> tuple[StatusPage, StatusPageSubscriber | None]:
        """The page in the link and its subscriber, when the token was made for both. A
        missing page, a private one (``public_only``) and a token made for another page or
        subscriber are one answer, which names no page."""
        invalid = NotFound("this link is not valid")
        page = await self.pages.by_slug(slug)
        if page is None or (public_only and not page.is_public):
            raise invalid
        subscriber = await self.pages.subscriber(page.id, subscriber_id)
        key = self.runtime.settings.signing_key
        if not (
            token_fits(key, purpose, page.id, subscriber_id, token)
            or (subscriber is not None and earlier_token_fits(key, purpose, subscriber_id, token))
        ):
            raise invalid
        return page, subscriber

    async def confirm(self, slug: str, subscriber_id: str, token: str) -> StatusPage:
        # A private page takes no subscribers (as ``subscribe``).
        page, subscriber = await self._subscriber(slug, subscriber_id, token, "confirm", True)
        if subscriber is None:
            raise NotFound("this subscription was removed; subscribe again")
        if subscriber.confirmed_at is None:
            subscriber.confirmed_at = self.runtime.clock.now()
            await self.session.flush()
        return page

    async def unsubscribe(self, slug: str, subscriber_id: str, token: str) -> StatusPage:
        """Idempotent: a second click finds nothing to remove and says the same. Works on a
        page made private since: leaving needs no public page."""
        page, subscriber = await self._subscriber(slug, subscriber_id, token, "unsubscribe", False)
        if subscriber is not None:
            await self.pages.delete(subscriber)
        return page
