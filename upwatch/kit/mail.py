"""Mail that is never dropped: an outbox table and a sender that retries with back-off."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from email.message import EmailMessage

import aiosmtplib
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.config import Settings
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database, after_commit
from upwatch.kit.mail_outbox import MailOutboxRepository
from upwatch.kit.metrics import Metrics
from upwatch.kit.outbox import Wakeable, backoff
from upwatch.models.mail import MailMessage

log = logging.getLogger(__name__)

# A claimed message is hidden this long; if the sender dies mid-send it is retried after it.
CLAIM_SECONDS = 120
FIRST_RETRY_SECONDS = 30
MAX_RETRY_SECONDS = 3600


def retry_delay(attempts: int) -> timedelta:
    """Back-off after the ``attempts``-th failure: 30 s doubling, at most an hour."""
    return backoff(attempts, FIRST_RETRY_SECONDS, MAX_RETRY_SECONDS)


class PermanentMailError(Exception):
    """The server refused the message for good (5xx): retrying cannot help."""


# Categories whose body holds a secret (a reset link): blanked once delivered or failed.
SENSITIVE_CATEGORIES = frozenset({"password_reset"})
SCRUBBED_BODY = "(removed after delivery: it contained a secret link)"


def one_line(text: str) -> str:
    """Header values are single lines; user text may not add headers."""
    return " ".join(text.split())


class SmtpTransport:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def compose(self, message: MailMessage) -> EmailMessage:
        try:
            email = EmailMessage()
            email["From"] = self.settings.mail_from
            email["To"] = message.to_address
            email["Subject"] = one_line(message.subject)
            email["Message-ID"] = f"<{message.id}@upwatch>"
            email.set_content(message.body)
        except (ValueError, TypeError) as exc:
            raise PermanentMailError(f"cannot compose the message: {exc}") from exc
        return email

    async def send(self, message: MailMessage) -> None:
        await self.send_email(self.compose(message))

    async def send_email(self, email: EmailMessage) -> None:
        """Hand one composed message to the SMTP server; 5xx answers are permanent errors."""
        s = self.settings
        try:
            await aiosmtplib.send(
                email,
                hostname=s.smtp_host,
                port=s.smtp_port,
                username=s.smtp_username or None,
                password=s.smtp_password or None,
                start_tls=s.smtp_starttls,
                timeout=s.smtp_timeout_seconds,
            )
        except aiosmtplib.SMTPResponseException as exc:
            if 500 <= exc.code < 600:
                raise PermanentMailError(f"{exc.code} {exc.message}") from exc
            raise
        except aiosmtplib.SMTPRecipientsRefused as exc:
            raise PermanentMailError(str(exc)) from exc


class Mailer:
    def __init__(
        self, settings: Settings, database: Database, clock: Clock, metrics: Metrics
    ) -> None:
        self.settings = settings
        self.database = database
        self.clock = clock
        self.metrics = metrics
        self.transport = SmtpTransport(settings)
        self.loop = Wakeable()

    async def enqueue(
        self, session: AsyncSession, *, to: str, subject: str, body: str, category: str
    ) -> MailMessage:
        """Write the message in the caller's transaction; the sender is woken after commit."""
        message = MailMessage(
            to_address=to,
            # Subjects are built from user text (names); the column holds 300 characters.
            subject=one_line(subject)[:250],
            body=body,
            category=category,
            next_attempt_at=self.clock.now(),
        )
        await MailOutboxRepository(session).add(message)
        if not self.settings.smtp_configured:
            log.warning(
                "SMTP is not configured; %s mail to %s kept in the outbox as %s",
                category,
                to,
                message.id,
            )
        after_commit(session, self.wake)
        return message

    def wake(self) -> None:
        self.loop.wake()

    async def run(self) -> None:
        """Deliver due mail until cancelled; without SMTP, mail waits in the outbox."""
        await self.loop.drain_forever(
            self.deliver_due,
            lambda: self.settings.mail_poll_seconds,
            enabled=lambda: self.settings.smtp_configured,
        )

    async def deliver_due(self, batch: int = 50) -> int:
        """One pass over due messages; returns how many were attempted."""
        now = self.clock.now()
        async with self.database.worksession() as session:
            rows = await MailOutboxRepository(session).due(now, batch)
        attempted = 0
        for message_id, due_at in rows:
            message = await self._claim(message_id, due_at, now)
            if message is not None:
                attempted += 1
                await self._attempt(message)
        return attempted

    async def _claim(self, message_id: str, due_at: datetime, now: datetime) -> MailMessage | None:
        """Hide the message from other senders; only one claim on a given due time wins."""
        async with self.database.worksession() as session:
            outbox = MailOutboxRepository(session)
            won = await outbox.claim(message_id, due_at, now + timedelta(seconds=CLAIM_SECONDS))
            await session.commit()
            return await outbox.get(message_id) if won else None

    async def _attempt(self, message: MailMessage) -> None:
        error: str | None = None
        permanent = False
        try:
            await self.transport.send(message)
        except PermanentMailError as exc:
            error, permanent = str(exc), True
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:
            # Anything else still counts as an attempt, so a message can never loop forever
            # unrecorded; it fails for good once its attempts are spent.
            log.exception("unexpected error sending mail %s", message.id)
            error = f"{type(exc).__name__}: {exc}"
        now = self.clock.now()
        attempts = message.attempts + 1
        values: dict[str, object] = {"attempts": attempts, "last_error": error}
        if error is None:
            values.update(status="sent", sent_at=now)
            outcome = "sent"
            if message.category in SENSITIVE_CATEGORIES:
                values.update(body=SCRUBBED_BODY)
        elif permanent or attempts >= self.settings.mail_max_attempts:
            values.update(status="failed")
            outcome = "failed"
            if message.category in SENSITIVE_CATEGORIES:
                values.update(body=SCRUBBED_BODY)
            log.error("mail %s to %s failed for good: %s", message.id, message.to_address, error)
        else:
            values.update(next_attempt_at=now + retry_delay(attempts))
            outcome = "retry"
            log.warning("mail %s attempt %d failed: %s", message.id, attempts, error)
        self.metrics.mail_deliveries.labels(outcome).inc()
        async with self.database.worksession() as session:
            await MailOutboxRepository(session).record(message.id, values)
            await session.commit()
