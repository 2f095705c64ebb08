"""What an owner's stored data weighs (usage.storage), and the notices a caller reads."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.models import MailMessage, RetentionNotice, User
from upwatch.retention import rules
from upwatch.retention.repository.notices import NoticeRepository
from upwatch.retention.repository.storage import (
    CHECK_RESULT_BYTES,
    CHECK_TIMING_BYTES,
    StorageRepository,
)
from upwatch.retention.schemas import RetentionMetadata, RetentionNotificationOut
from upwatch.runtime import DomainService, uses

# A raw result with its timings, as usage counts it (timings exist for HTTP checks only:
# an upper bound for the other types).
RESULT_BYTES = CHECK_RESULT_BYTES + CHECK_TIMING_BYTES


async def stored_bytes(session: AsyncSession, owner_id: str, *, results: bool = True) -> int:
    """The owner's raw results, incidents and alert records, by per-row estimates. Results
    are counted from the day aggregates, never row by row: the retention job's figure up to
    yesterday, plus the days since (``results=False`` leaves them out)."""
    repository = StorageRepository(session)
    total = await repository.history_bytes(owner_id)
    if results:
        total += await repository.kept_result_rows(owner_id) * RESULT_BYTES
    return total


def notification_out(notice: RetentionNotice, mail: MailMessage | None) -> RetentionNotificationOut:
    sent = mail is not None and mail.status == "sent"
    attempts = mail.attempts if mail is not None else 0
    # Until the first delivery attempt: when the notice was made (and its e-mail queued).
    last = (mail.last_attempt_at if mail is not None else None) or notice.created_at
    return RetentionNotificationOut(
        id=notice.id,
        userId=notice.user_id,
        dataType=notice.data_type,
        expiryDate=notice.expiry_date,
        notified=sent,
        retryCount=rules.retry_count(notice.earlier_attempts, attempts, sent),
        lastNotificationAttempt=last,
        metadata=RetentionMetadata(count=notice.count, sizeBytes=notice.size_bytes),
        createdAt=notice.created_at,
        updatedAt=max(notice.updated_at, last),
    )


class RetentionService(DomainService):
    notices = uses(NoticeRepository)

    async def upcoming(self, user: User) -> list[RetentionNotificationOut]:
        """The caller's data that expires next, soonest first."""
        rows = await self.notices.upcoming(user.id, self.runtime.clock.now())
        return [notification_out(notice, mail) for notice, mail in rows]
