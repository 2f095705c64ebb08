"""The retention job: once a day per owner, purge the batches that are due, then announce
the next ones seven days ahead (contract §12, seed 19).

Safe to run in several processes at once: an owner's run is claimed with one conditional
UPDATE (``ClaimRepository.claim``), every batch renews that claim in its own transaction
(a run whose claim expired and was taken stops before it deletes more), notices are unique per
owner, type and expiry, and deleted incidents are rolled up by the statement that deletes
them. A crash leaves the claim to expire; the next run picks the owner up where it stopped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from upwatch.callers.plans import plan_of
from upwatch.config import Settings
from upwatch.kit import languages
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database, WorkSession, commit_and_notify
from upwatch.kit.ids import new_id
from upwatch.kit.languages import N_
from upwatch.kit.metrics import Metrics
from upwatch.kit.plans import PlanCatalog
from upwatch.kit.progress import progress
from upwatch.mail.sender import Mailer
from upwatch.models import HourlyCount, RetentionNotice, User
from upwatch.retention import rules
from upwatch.retention.repository.audit import AuditPurgeRepository
from upwatch.retention.repository.claims import ClaimRepository
from upwatch.retention.repository.notices import NoticeRepository
from upwatch.retention.repository.purge import PurgeRepository
from upwatch.retention.repository.storage import StorageRepository
from upwatch.retention.service import RESULT_BYTES, stored_bytes

log = logging.getLogger(__name__)

# Deleted in this order: timings before their results, alert records before their incidents.
PURGE_ORDER = ("monitoring_data", "check_results", "alert_history", "incident_data")
# Purged notices are kept a while (nobody lists them; they mark what was announced).
PURGED_NOTICES_KEPT = timedelta(days=35)
# Hour counts are read for 24-hour figures only; a day more covers clocks and late results.
HOUR_COUNTS_KEPT = timedelta(days=2)
OWNERS_PER_QUERY = 100
WORDS = {
    "check_results": N_("check results"),
    "monitoring_data": N_("per-check timings"),
    "alert_history": N_("alert history"),
    "incident_data": N_("resolved incidents and their timelines"),
}


class LostClaim(Exception):
    """Another run took this owner over (our claim expired): stop without deleting more."""


@dataclass(eq=False)
class RetentionJob:
    settings: Settings
    database: Database
    clock: Clock
    metrics: Metrics
    mailer: Mailer
    catalog: PlanCatalog

    async def run(self) -> None:
        """The supervised loop: a pass over the due owners, then a wait."""
        while True:
            await self.run_once()
            progress()
            await asyncio.sleep(self.settings.retention_poll_seconds)

    async def run_once(self) -> int:
        """Every owner whose run for today is due and free; how many this call finished."""
        finished = 0
        skipped: set[str] = set()
        while True:
            now = self.clock.now()
            async with self.database.workreader() as session:
                owners = await ClaimRepository(session).owners_due(
                    now.date().isoformat(), now, OWNERS_PER_QUERY + len(skipped)
                )
            owners = [o for o in owners if o not in skipped]
            if not owners:
                break
            for owner_id in owners:
                try:
                    done = await self.run_owner(owner_id)
                except LostClaim:
                    log.warning("retention of owner %s was taken over by another run", owner_id)
                    done = False
                if done:
                    finished += 1
                else:
                    skipped.add(owner_id)  # claimed elsewhere: not ours today
        await self.purge_nobodys_audit()
        self.metrics.retention_last_success.set(time.time())
        return finished

    async def run_owner(self, owner_id: str) -> bool:
        """Claim ``owner_id``'s run for today and do it; False when it is not ours to do."""
        now = self.clock.now()
        today = now.date().isoformat()
        token = new_id()
        async with self.database.worksession() as session:
            won = await ClaimRepository(session).claim(owner_id, today, now, self._lease(), token)
            await session.commit()
        if not won:
            return False
        async with self.database.workreader() as session:
            plan = await plan_of(session, self.catalog, owner_id)
            notices = await NoticeRepository(session).notices(owner_id)
            run = await ClaimRepository(session).run_of(owner_id)
        days = plan.retentionDays
        kept_from = run.kept_from_day if run else None

        due = sorted(
            (n for n in notices if n.purged_at is None and n.expiry_date <= now),
            key=lambda n: (n.expiry_date, PURGE_ORDER.index(n.data_type)),
        )
        for notice in due:
            before = rules.purge_cutoff(
                notice.cutoff, notice.expiry_date, notice.retention_days, days
            )
            await self._purge(owner_id, token, notice.data_type, before)
            async with self.database.worksession() as session:
                await self._hold(session, owner_id, token)
                await NoticeRepository(session).mark_purged(notice.id, self.clock.now())
                await session.commit()
            if notice.data_type == "check_results":
                day = before.date().isoformat()
                kept_from = max(kept_from or day, day)
        aggregates_before = rules.aggregate_cutoff_day(now.date(), days)
        if aggregates_before is not None:
            async with self.database.worksession() as session:
                await self._hold(session, owner_id, token)
                await PurgeRepository(session).purge_days(owner_id, aggregates_before.isoformat())
                await session.commit()

        if rules.expires(days):
            # Audit events go on the day they expire, unannounced: they are a record about
            # the account, not data it keeps (docs/audit-log.md).
            await self._purge_audit(owner_id, token, now - timedelta(days=days))

        async with self.database.worksession() as session:
            await self._hold(session, owner_id, token)
            await PurgeRepository(session).purge_hours(
                owner_id, HourlyCount.key_of(now - HOUR_COUNTS_KEPT)
            )
            await session.commit()

        async with self.database.workreader() as session:
            by_day = await StorageRepository(session).result_rows_by_day(owner_id, kept_from)
        await self._announce(owner_id, token, days, plan.storageLimit, by_day)

        through = (now.date() - timedelta(days=1)).isoformat()
        rows = sum(n for day, n in by_day if day.isoformat() <= through)
        async with self.database.worksession() as session:
            await NoticeRepository(session).forget_purged(owner_id, now - PURGED_NOTICES_KEPT)
            if not await ClaimRepository(session).finish(
                owner_id, token, today, rows, kept_from, through
            ):
                raise LostClaim(owner_id)
            await session.commit()
        return True

    async def _purge_audit(self, owner_id: str, token: str, before: datetime) -> None:
        rows = self.settings.retention_batch_rows

        async def batch(repository: PurgeRepository, after: Any) -> tuple[int, Any]:
            gone = await AuditPurgeRepository(repository.session).purge_owner(
                owner_id, before, rows
            )
            return gone, (True if gone == rows else None)

        await self._batches(owner_id, token, "audit_events", batch)

    async def purge_nobodys_audit(self) -> int:
        """Events no account or project holds any more (a failed sign-in at an unknown
        address, a deleted account's): kept as long as the default plan keeps data."""
        days = self.catalog.get(self.catalog.default_plan).retentionDays
        if not rules.expires(days):
            return 0
        before = self.clock.now() - timedelta(days=days)
        rows = self.settings.retention_batch_rows
        total = 0
        while True:
            async with self.database.worksession() as session:
                gone = await AuditPurgeRepository(session).purge_nobodys(before, rows)
                await session.commit()
            total += gone
            self.metrics.retention_purged.labels("audit_events").inc(gone)
            if gone < rows:
                return total
            await asyncio.sleep(self.settings.retention_batch_pause_seconds)

    def _lease(self) -> datetime:
        return self.clock.now() + timedelta(seconds=self.settings.retention_claim_seconds)

    async def _hold(self, session: WorkSession, owner_id: str, token: str) -> None:
        if not await ClaimRepository(session).renew(owner_id, token, self._lease()):
            raise LostClaim(owner_id)

    async def _purge(self, owner_id: str, token: str, data_type: str, before: datetime) -> None:
        """Delete in bounded batches, each its own short transaction, pausing between them:
        no statement holds the table (or SQLite's one writer lock) for long. Each batch
        starts where the last one ended (``PurgeRepository.purge_results``)."""
        rows = self.settings.retention_batch_rows
        if data_type in ("check_results", "monitoring_data"):
            async with self.database.workreader() as session:
                monitors = await PurgeRepository(session).monitor_ids(owner_id)

            async def batch(repository: PurgeRepository, after: Any) -> tuple[int, Any]:
                return await repository.purge_results(monitors, data_type, before, rows, after)
        else:

            async def batch(repository: PurgeRepository, after: Any) -> tuple[int, Any]:
                return await repository.purge_batch(owner_id, data_type, before, rows, after)

        await self._batches(owner_id, token, data_type, batch)

    async def _batches(
        self,
        owner_id: str,
        token: str,
        data_type: str,
        batch: Callable[[PurgeRepository, Any], Awaitable[tuple[int, Any]]],
    ) -> None:
        after: Any = None
        while True:
            async with self.database.worksession() as session:
                await self._hold(session, owner_id, token)
                gone, after = await batch(PurgeRepository(session), after)
                await session.commit()
            self.metrics.retention_purged.labels(data_type).inc(gone)
            progress()
            if after is None:
                return
            await asyncio.sleep(self.settings.retention_batch_pause_seconds)

    async def _announce(
        self,
        owner_id: str,
        token: str,
        days: int,
        storage_limit_mb: int,
        by_day: list[tuple[date, int]],
    ) -> None:
        """Make the next batch's notices where none is pending, drop those a plan change
        outdated, and e-mail the owner once for what this run announced (and again for
        notices whose e-mail failed for good). The rows are measured in a read transaction
        first: on SQLite a write transaction holds the one write lock, and the ingester must
        not wait for a count over millions of rows."""
        now = self.clock.now()
        planned: list[RetentionNotice] = []
        async with self.database.workreader() as session:
            notices = NoticeRepository(session)
            pending = [
                n
                for n in await notices.notices(owner_id)
                if n.purged_at is None and n.expiry_date > now
            ]
            outdated = [n.id for n in pending if n.retention_days != days]
            pending = [n for n in pending if n.retention_days == days]
            if rules.expires(days):
                expiry = rules.next_expiry(now)
                # Past the storage limit, raw results of earlier days go too; never today's.
                raw_cutoff = max(
                    rules.cutoff(expiry, days),
                    min(
                        await self._storage_cutoff(session, owner_id, storage_limit_mb, by_day),
                        rules.midnight(now.date()),
                    ),
                )
                for data_type in rules.DATA_TYPES:
                    if any(n.data_type == data_type for n in pending):
                        continue
                    raw = data_type in ("check_results", "monitoring_data")
                    before = raw_cutoff if raw else rules.cutoff(expiry, days)
                    count, size = await PurgeRepository(session).measure(
                        owner_id, data_type, before
                    )
                    if count:
                        planned.append(
                            RetentionNotice(
                                id=new_id(),
                                user_id=owner_id,
                                data_type=data_type,
                                expiry_date=expiry,
                                cutoff=before,
                                retention_days=days,
                                count=count,
                                size_bytes=size,
                                created_at=now,
                                updated_at=now,
                            )
                        )
            mails = await notices.mails([n.mail_id for n in pending if n.mail_id])
            failed = [n for n in pending if n.mail_id and mails[n.mail_id].status == "failed"]
            owner = await session.get(User, owner_id)
        if not (outdated or planned or failed):
            return
        assert owner is not None  # claimed rows go with their account
        async with self.database.worksession() as session:
            await self._hold(session, owner_id, token)
            notices = NoticeRepository(session)
            await notices.drop_notices(outdated)
            made = [n for n in planned if await notices.add_notice(n)]
            self.metrics.retention_notices.inc(len(made))
            if made:
                mail_id = await self._mail(session, owner, made, days)
                await notices.set_mail([n.id for n in made], mail_id, now)
            if failed:
                # The outbox spent its attempts (a day of SMTP trouble): try again with a new
                # e-mail, counting the old one's attempts in retryCount.
                mail_id = await self._mail(session, owner, failed, days)
                for notice in failed:
                    assert notice.mail_id is not None
                    await notices.remail([notice.id], mail_id, mails[notice.mail_id].attempts, now)
            await commit_and_notify(session)

    async def _mail(
        self, session: WorkSession, owner: User, notices: list[RetentionNotice], days: int
    ) -> str:
        """Queue the e-mail announcing ``notices`` to ``owner`` (in their language) in the
        outbox; its id."""
        subject, body = _notice_mail(notices, days, languages.of_settings(owner.settings))
        mail = await self.mailer.enqueue(
            session, to=owner.email, subject=subject, body=body, category="retention"
        )
        return mail.id

    async def _storage_cutoff(
        self,
        session: WorkSession,
        owner_id: str,
        limit_mb: int,
        by_day: list[tuple[date, int]],
    ) -> datetime:
        """Past the plan's storageLimit, the oldest raw results go early: the first day whose
        results, newest first, still fit beside everything else the owner stores."""
        limit = limit_mb * 1024 * 1024
        other = await stored_bytes(session, owner_id, results=False)
        fits_from = rules.storage_cutoff_day(by_day, RESULT_BYTES, limit - other)
        if fits_from is None:
            return datetime.min.replace(tzinfo=UTC)
        return rules.midnight(fits_from)


def _notice_mail(
    notices: list[RetentionNotice], days: int, language: str = languages.SOURCE
) -> tuple[str, str]:
    """Subject and body of the e-mail announcing ``notices``, in ``language``."""
    _ = languages.gettext_in(language)
    ngettext = languages.ngettext_in(language)
    expiry = min(n.expiry_date for n in notices)
    lines = [
        "- "
        + ngettext(
            "%(what)s from before %(day)s: %(count)d record, about %(size)s",
            "%(what)s from before %(day)s: %(count)d records, about %(size)s",
            n.count,
        )
        % {
            "what": _(WORDS[n.data_type]),
            "day": languages.day(n.cutoff, language),
            "count": n.count,
            "size": _size(n.size_bytes),
        }
        for n in sorted(notices, key=lambda n: rules.DATA_TYPES.index(n.data_type))
    ]
    body = (
        ngettext(
            "On %(day)s at 00:00 UTC, Upwatch deletes this data of your account, which is "
            "older than your plan keeps (%(days)d day):",
            "On %(day)s at 00:00 UTC, Upwatch deletes this data of your account, which is "
            "older than your plan keeps (%(days)d days):",
            days,
        )
        % {"day": languages.day(expiry, language, weekday=True), "days": days}
        + "\n\n"
        + "\n".join(lines)
        + "\n\n"
        + _(
            "Daily uptime and response-time figures stay (at least 90 days), so status pages "
            "and 90-day statistics are not affected. To keep raw data longer, move to a plan "
            "with a longer retention before that date; GET /retention/notifications lists "
            "what is due."
        )
        + "\n"
    )
    subject = ngettext(
        "Data older than %(days)d day is deleted on %(day)s",
        "Data older than %(days)d days is deleted on %(day)s",
        days,
    ) % {
        "days": days,
        "day": languages.day(expiry, language),
    }
    return subject, body


def _size(size_bytes: int) -> str:
    if size_bytes >= 1024 * 1024:
        return f"{size_bytes / 1024 / 1024:.1f} MB"
    return f"{max(1, round(size_bytes / 1024))} kB"
