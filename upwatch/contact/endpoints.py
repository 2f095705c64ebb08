"""POST /contact (public), GET /contact and PATCH /contact/{id} (admin)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body

from upwatch.callers.dependencies import AdminUser
from upwatch.contact.schemas import ContactRequest, ContactSubmissionOut, ContactUpdate
from upwatch.contact.service import ContactService
from upwatch.dependencies import ClientAddress, RuntimeDep, Session
from upwatch.kit.errors import problem_responses
from upwatch.kit.pagination import PageParams
from upwatch.kit.routes import Routes
from upwatch.kit.schemas import MessageOut
from upwatch.models import ContactSubmission

router = Routes("/contact", "contact", (400, 422, 429, 500))


def submission_out(item: ContactSubmission) -> ContactSubmissionOut:
    return ContactSubmissionOut.model_validate(item)


@router.creates("submitContact", 400, 429)
async def submit_contact(
    body: ContactRequest, session: Session, runtime: RuntimeDep, client: ClientAddress
) -> MessageOut:
    """Send a message to the operators (e-mailed to them, stored for follow-up)."""
    await ContactService(session, runtime).submit(body, client)
    return MessageOut(message="Thank you, your message has been received")


@router.get("", operation_id="listContactSubmissions", responses=problem_responses(401, 403))
async def list_contact(
    _admin: AdminUser, session: Session, runtime: RuntimeDep, page: PageParams
) -> list[ContactSubmissionOut]:
    """Contact submissions, newest first (admin)."""
    items, total = await ContactService(session, runtime).newest_first(page.limit, page.offset)
    page.total(total)
    return [submission_out(s) for s in items]


@router.updates("followUpContact", 400, 401, 403, 404)
async def follow_up_contact(
    id: str,
    _admin: AdminUser,
    session: Session,
    runtime: RuntimeDep,
    body: Annotated[ContactUpdate | None, Body()] = None,
) -> ContactSubmissionOut:
    """Mark a submission as followed up (an empty body sets `contacted: true`); an optional
    body sets `contacted` and `admin_notes`."""
    submission = await ContactService(session, runtime).follow_up(id, body or ContactUpdate())
    return submission_out(submission)
