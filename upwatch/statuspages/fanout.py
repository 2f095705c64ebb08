"""The subscriber fan-out: expands each notice (``SubscriberNotice``, written in the
transaction of the change) into one delivery per subscriber who follows a component it
touches, in batches after the commit.

Each batch is one transaction: the next ``subscriber_fanout_batch`` confirmed subscribers by
id (keyset pagination), their mail outbox rows or webhook/Slack deliveries, and the notice's
cursor moved past them. A crash loses at most the batch in flight, which the next claim does
again: every subscriber gets exactly one notice. A notice is claimed by moving its due time
past a lease (``subscriber_fanout_claim_seconds``), as the mail outbox claims messages; a
process whose lease lapsed and was taken finds the cursor moved and drops its batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from upwatch.config import Settings
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.ids import new_id
from upwatch.kit.outbox import Wakeable
from upwatch.kit.progress import progress
from upwatch.kit.supervisor import Supervisor
from upwatch.mail.sender import Mailer, one_line
from upwatch.models import StatusPage, SubscriberNotice
from upwatch.statuspages import rules
from upwatch.statuspages.hooks import SubscriberHooks
from upwatch.statuspages.outbox import Follower, NoticeRepository
from upwatch.statuspages.render import Words
from upwatch.statuspages.subscribers import NOTICE_CATEGORY, Links

log = logging.getLogger(__name__)


class Fanout:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        clock: Clock,
        mailer: Mailer,
        hooks_wake: Callable[[], None],
    ) -> None:
        self.settings = settings
        self.db = db
        self.clock = clock
        self.mailer = mailer
        self.hooks_wake = hooks_wake
        self.links = Links(settings)
        self.loop = Wakeable()

    def wake(self) -> None:
        self.loop.wake()

    async def run(self) -> None:
        """Expand due notices until cancelled (a failure raises: the supervisor restarts)."""
        await self.loop.drain_forever(self.expand_due, lambda: self.settings.mail_poll_seconds)

    def _lease(self, now: datetime) -> datetime:
        return now + timedelta(seconds=self.settings.subscriber_fanout_claim_seconds)

    async def expand_due(self) -> int:
        """Claim and expand the due notices; how many were claimed."""
        now = self.clock.now()
        async with self.db.workreader() as session:
            due = await NoticeRepository(session).due_notices(now, 20)
        claimed = 0
        for notice_id, due_at in due:
            async with self.db.worksession() as session:
                won = await NoticeRepository(session).claim(notice_id, due_at, self._lease(now))
                await session.commit()
            if won:
                claimed += 1
                while await self.expand_batch(notice_id):
                    progress()
        return claimed

    async def expand_batch(self, notice_id: str) -> bool:
        """One batch in one transaction; whether more may follow."""
        now = self.clock.now()
        async with self.db.worksession() as session:
            notices = NoticeRepository(session)
            notice = await notices.notice(notice_id)
            page = await session.get(StatusPage, notice.status_page_id) if notice else None
            if notice is None or page is None or notice.done:
                return False
            batch = self.settings.subscriber_fanout_batch
            followers = await notices.followers_after(page.id, notice.cursor, batch)
            mail: list[dict[str, Any]] = []
            hooks: list[dict[str, Any]] = []
            for follower in followers:
                if not rules.follows(follower.component_ids, notice.component_ids):
                    continue
                if follower.kind == "email" and follower.email:
                    mail.append(self._mail(page, notice, follower, now))
                elif follower.kind in ("webhook", "slack"):
                    hooks.append(
                        {
                            "notice_id": notice.id,
                            "subscriber_id": follower.id,
                            "message_id": f"msg_{new_id()}",
                            "status": "pending",
                            "attempts": 0,
                            "next_attempt_at": now,
                            "created_at": now,
                        }
                    )
            await notices.add_mail(mail)
            await notices.add_deliveries(hooks)
            done = len(followers) < batch
            cursor = followers[-1].id if followers else notice.cursor
            count = len(mail) + len(hooks)
            if not await notices.advance(
                notice.id, notice.cursor, cursor, count, done, self._lease(now), now
            ):
                # Another process took the notice over: its batches count, not this one.
                await session.rollback()
                return False
            await session.commit()
        if mail:
            self.mailer.wake()
            if not self.settings.smtp_configured:
                # One line per batch, not each message in full: a page may have thousands.
                log.info(
                    "SMTP is not configured; %d notices of %s kept in the outbox",
                    len(mail),
                    page.slug,
                )
        if hooks:
            self.hooks_wake()
        return not done

    def _mail(
        self, page: StatusPage, notice: SubscriberNotice, follower: Follower, now: datetime
    ) -> dict[str, Any]:
        unsubscribe = self.links.of("unsubscribe", page, follower.id)
        said = Words(page.language)
        why = said.gettext("You get this because you subscribed to %(page)s status updates.")
        leave = said.gettext("Unsubscribe with one click: %(link)s") % {"link": unsubscribe}
        body = f"{notice.text}\n\n{why % {'page': page.name}}\n{leave}\n"
        return {
            "id": new_id(),
            "to_address": follower.email,
            "subject": one_line(notice.subject)[:250],
            "body": body,
            "category": NOTICE_CATEGORY,
            "headers": {
                "List-Unsubscribe": f"<{unsubscribe}>",
                "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            },
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
            "updated_at": now,
        }


def start_subscriber_roles(
    supervisor: Supervisor, settings: Settings, fanout: Fanout, hooks: SubscriberHooks
) -> None:
    """The fan-out and the webhook/Slack sender, supervised (``subscriber-fanout``,
    ``subscriber-sender``). A pass may take a batch's transaction or a delivery's timeout."""
    hooks.start()
    supervisor.start("subscriber-fanout", fanout.run, settings.mail_poll_seconds + 30.0)
    supervisor.start(
        "subscriber-sender",
        hooks.run,
        settings.alert_poll_seconds + settings.alert_timeout_seconds,
    )
