"""Mail that is never dropped: an outbox table and a sender that retries with back-off."""

from __future__ import annotations

import logging
import random
import re
import textwrap
from datetime import datetime, timedelta
from email import policy
from email.message import EmailMessage
from email.utils import getaddresses, parseaddr
from functools import partial

import aiosmtplib
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.config import Settings
from upwatch.kit.backoff import Draw, backoff
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database, after_commit
from upwatch.kit.logs import MASK, log_event
from upwatch.kit.metrics import Metrics
from upwatch.kit.outbox import Wakeable
from upwatch.mail.repository import MailOutboxRepository
from upwatch.models.mail import MailMessage

log = logging.getLogger(__name__)

# A claimed message is hidden this long; if the sender dies mid-send it is retried after it.
CLAIM_SECONDS = 120
FIRST_RETRY_SECONDS = 30
MAX_RETRY_SECONDS = 3600


def retry_delay(attempts: int, draw: Draw = random.random) -> timedelta:
    """Back-off after the ``attempts``-th failure: 30 s doubling, at most an hour, each wait
    jittered within the upper half of its step."""
    return backoff(attempts, FIRST_RETRY_SECONDS, MAX_RETRY_SECONDS, draw)


class PermanentMailError(Exception):
    """The server refused the message for good (5xx): retrying cannot help."""


# Categories whose body holds a secret (a reset or invitation link): blanked once delivered
# or failed, and masked when an administrator lists the outbox.
SENSITIVE_CATEGORIES = frozenset({"password_reset", "project_invitation"})
# Masked in the outbox listing too: a status-page subscriber's confirm and unsubscribe links
# (the categories of statuspages/subscribers.py), whose tokens act for that visitor. Their
# bodies are kept after delivery: a notice says what visitors were told.
MASKED_CATEGORIES = SENSITIVE_CATEGORIES | {"status_page_subscription", "status_page_notice"}
SCRUBBED_BODY = "(removed after delivery: it contained a secret link)"
# Our tokens are 43 characters; a shorter "token=" is text (a project named so), not a secret.
_LINK_TOKEN = re.compile(r"[?&]token=([^&#\s]{16,})")


# Long header values (a List-Unsubscribe address with its token) are folded at whitespace,
# never turned into encoded words, which mail clients would not read as an address.
HEADER_POLICY = policy.default.clone(max_line_length=998)
SMTP_POLICY = policy.SMTP.clone(max_line_length=998)


def masked_body(category: str, body: str) -> str:
    """The body as an administrator may read it: in ``MASKED_CATEGORIES`` every token that a
    link carries is masked, wherever the body repeats it."""
    if category not in MASKED_CATEGORIES:
        return body
    for token in set(_LINK_TOKEN.findall(body)):
        body = body.replace(token, MASK)
    return body


def one_line(text: str) -> str:
    """Header values are single lines; user text may not add headers."""
    return " ".join(text.split())


class SmtpTransport:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def compose(self, message: MailMessage) -> EmailMessage:
        try:
            email = EmailMessage(policy=HEADER_POLICY)
            email["From"] = self.settings.mail_from
            email["To"] = message.to_address
            email["Subject"] = one_line(message.subject)
            email["Message-ID"] = f"<{message.id}@upwatch>"
            for name, value in (message.headers or {}).items():
                email[name] = one_line(value)
            email.set_content(message.body)
        except (ValueError, TypeError) as exc:
            raise PermanentMailError(f"cannot compose the message: {exc}") from exc
        return email

    async def send(self, message: MailMessage) -> None:
        await self.send_email(self.compose(message))

    async def send_email(self, email: EmailMessage) -> None:
        """Hand one composed message to the SMTP server; 5xx answers are permanent errors."""
        s = self.settings
        # Flattened here, not by aiosmtplib (whose policy folds at 78 characters and so
        # encodes a long List-Unsubscribe address): lines may run to SMTP's 998.
        sender = parseaddr(str(email["From"]))[1]
        recipients = [a for _, a in getaddresses([str(v) for v in email.get_all("To", [])]) if a]
        try:
            await aiosmtplib.send(
                email.as_bytes(policy=SMTP_POLICY),
                sender=sender,
                recipients=recipients,
                hostname=s.smtp_host,
                port=s.smtp_port,
                username=s.smtp_username or None,
                password=s.smtp_password or None,
                start_tls=s.smtp_starttls,
                use_tls=s.smtp_tls,
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
        self,
        session: AsyncSession,
        *,
        to: str,
        subject: str,
        body: str,
        category: str,
        headers: dict[str, str] | None = None,
    ) -> MailMessage:
        """Write the message in the caller's transaction; the sender is woken after commit."""
        message = MailMessage(
            to_address=to,
            # Subjects are built from user text (names); the column holds 300 characters.
            subject=one_line(subject)[:250],
            body=body,
            category=category,
            headers=headers,
            next_attempt_at=self.clock.now(),
        )
        await MailOutboxRepository(session).add(message)
        if not self.settings.smtp_configured:
            after_commit(session, partial(self._write_to_log, message, warn=True))
        after_commit(session, self.wake)
        return message

    def _write_to_log(self, message: MailMessage, *, warn: bool) -> None:
        """Without SMTP the log is where mail can be read: the whole message at INFO, links
        and all, so an invitation or a reset link can be used. Never with SMTP configured."""
        if warn:
            log.warning(
                "SMTP is not configured; %s mail to %s kept in the outbox as %s",
                message.category,
                message.to_address,
                message.id,
            )
        log_event(
            log,
            "mail.logged",
            "mail %s, not sent (SMTP is not configured):\n    To: %s\n    Subject: %s\n\n%s",
            message.id,
            message.to_address,
            message.subject,
            # Indented, so text a user wrote (a contact message) cannot pass for a log line.
            textwrap.indent(message.body, "    ", lambda _line: True),
            mail_id=message.id,
            category=message.category,
        )

    async def resend(self, session: AsyncSession, message: MailMessage) -> bool:
        """Make an unsent (pending or failed) message due now with a fresh set of attempts;
        False when it was sent meanwhile. Without SMTP it is written to the log again instead,
        and stays in the outbox."""
        if not await MailOutboxRepository(session).requeue(message.id, self.clock.now()):
            return False
        await session.refresh(message)
        if not self.settings.smtp_configured:
            after_commit(session, partial(self._write_to_log, message, warn=False))
        after_commit(session, self.wake)
        return True

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
        async with self.database.workreader() as session:
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
        values: dict[str, object] = {
            "attempts": attempts,
            "last_error": error,
            "last_attempt_at": now,
        }
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
