from __future__ import annotations

import logging

from upwatch.accounts.repository import UserRepository
from upwatch.contact.repository import ContactRepository
from upwatch.contact.schemas import ContactRequest, ContactUpdate
from upwatch.kit import languages
from upwatch.kit.errors import NotFound, TooManyRequests
from upwatch.models import ContactSubmission
from upwatch.runtime import DomainService, uses

log = logging.getLogger(__name__)


class ContactService(DomainService):
    submissions = uses(ContactRepository)

    async def submit(self, body: ContactRequest, client: str) -> ContactSubmission:
        window = self.runtime.throttles.contact_address
        wait = await window.take(client)
        if wait is not None:
            raise TooManyRequests("too many messages from this address", retry_after=wait)
        submission = await self.submissions.add(
            ContactSubmission(
                name=body.name,
                email=body.email,
                subject=body.subject,
                message=body.message,
                client_address=client,
            )
        )
        link = f"{self.runtime.settings.public_url}/contact/{submission.id}"
        for address, language in await self._operators():
            _ = languages.gettext_in(language)
            await self.runtime.mailer.enqueue(
                self.session,
                to=address,
                subject=_("[Upwatch contact] %(subject)s") % {"subject": body.subject},
                body=(
                    _("From: %(name)s <%(address)s>") % {"name": body.name, "address": body.email}
                    + "\n"
                    + _("Subject: %(subject)s") % {"subject": body.subject}
                    + f"\n\n{body.message}\n\n"
                    + _("Follow up: %(link)s") % {"link": link}
                    + "\n"
                ),
                category="contact",
            )
        return submission

    async def _operators(self) -> list[tuple[str, str]]:
        """Who hears of a submission, each with their language (the configured address has
        none: English)."""
        if self.runtime.settings.admin_email:
            return [(self.runtime.settings.admin_email, languages.SOURCE)]
        admins = await UserRepository(self.session).admins()
        if not admins:
            log.warning("contact submission stored, but no admin exists to notify")
        return [(admin.email, languages.of_settings(admin.settings)) for admin in admins]

    async def newest_first(self, limit: int, offset: int) -> tuple[list[ContactSubmission], int]:
        items, total = await self.submissions.newest_first(limit, offset)
        return list(items), total

    async def get(self, submission_id: str) -> ContactSubmission | None:
        return await self.submissions.get(submission_id)

    async def follow_up(self, submission_id: str, body: ContactUpdate) -> ContactSubmission:
        submission = await self.submissions.get(submission_id)
        if submission is None:
            raise NotFound("no such contact submission")
        submission.contacted = body.contacted if body.contacted is not None else True
        if "admin_notes" in body.model_fields_set:
            submission.admin_notes = body.admin_notes
        await self.session.flush()
        await self.session.refresh(submission)
        return submission
