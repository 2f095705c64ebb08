"""Signing up, in and out; forgotten passwords; invitations; the links the e-mails carry.

Before there is a session, the sign-in forms carry a CSRF token of their own, also set as a
SameSite=Strict cookie (double submit).
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import parse_qs, quote, urlencode

from fastapi import APIRouter, BackgroundTasks, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.types import ASGIApp, Receive, Scope, Send

from upwatch.accounts.factors import (
    PENDING_COOKIE,
    PENDING_LIFETIME,
    PendingSignIns,
    has_second_factor,
)
from upwatch.accounts.schemas import ResetPasswordRequest, SignupRequest
from upwatch.accounts.service import AccountService, accept_reset_request, send_reset_link
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import (
    SESSION_COOKIE,
    Answer,
    SignedInPage,
    Visitor,
    after_sign_in,
    errors_of,
    html,
    read_form,
    redirect,
    secure,
    status_of,
    words_for,
)
from upwatch.console.service import ConsoleSessions, SignedIn, new_csrf_token, same_token
from upwatch.dependencies import ClientAddress, RuntimeDep, Session
from upwatch.kit.db import discard_changes
from upwatch.kit.errors import NotFound, ProblemError, ValidationFailed
from upwatch.kit.languages import N_
from upwatch.models import User
from upwatch.projects.service import ProjectService, accept_invitation
from upwatch.runtime import Runtime

FORM_COOKIE: Final = "upwatch_form"  # the sign-in forms' CSRF token, before any session
# Each page's template and title (translated where shown).
SIGN_IN: Final = ("login.html", N_("Sign in"))
SIGN_UP: Final = ("signup.html", N_("Create an account"))
FORGOT: Final = ("forgot.html", N_("Forgot your password?"))
RESET: Final = ("reset.html", N_("Choose a new password"))
SECOND_STEP_PATH: Final = "/app/login/second-factor"  # console/endpoints/second_factor.py
# What the sign-in form carried that the second step carries on.
CARRIED: Final = ("next", "invitation")

router = APIRouter(prefix="/app")
# The e-mails link to these paths (contract §4 fixes the reset link); the console serves them.
links = APIRouter(include_in_schema=False)


def _sign_in_page(
    request: Request, which: tuple[str, str], status: int = 200, **context: Any
) -> Response:
    template, title = which
    settings = request.app.state.runtime.settings
    context.setdefault("sso", settings.oidc_name if settings.sso_configured else "")
    token = request.cookies.get(FORM_COOKIE) or new_csrf_token()
    title = words_for(request).gettext(title)
    response = html(request, template, status, title=title, csrf=token, **context)
    response.set_cookie(
        FORM_COOKIE, token, path="/app", httponly=True, samesite="strict", secure=secure(request)
    )
    return response


async def _sign_in_form(request: Request, which: tuple[str, str]) -> dict[str, str]:
    """The posted form, once its token matches the form cookie's."""
    form = await read_form(request)
    if not same_token(form.get("csrf"), request.cookies.get(FORM_COOKIE) or ""):
        refused = {"": words_for(request).gettext("Reload and retry.")}
        raise Answer(_sign_in_page(request, which, 403, form=form, errors=refused))
    return form


def _form_again(
    request: Request,
    session: AsyncSession,
    which: tuple[str, str],
    form: dict[str, str],
    exc: ProblemError | ValidationError,
) -> Response:
    # A failed sign-in's audit event is kept (keep_changes), as the API keeps it.
    if not getattr(exc, "keep_changes", False):
        discard_changes(session)
    errors = errors_of(exc, words_for(request))
    return _sign_in_page(request, which, status_of(exc), form=form, errors=errors)


async def _start_session(
    request: Request,
    session: AsyncSession,
    runtime: Runtime,
    user: User,
    flash: str,
    wanted: str | None = None,
) -> RedirectResponse:
    token = await ConsoleSessions(session, runtime).open(user)
    response = redirect(request, after_sign_in(wanted), flash)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        path="/app",
        httponly=True,
        samesite="lax",
        secure=secure(request),
        max_age=14 * 24 * 3600,
    )
    response.delete_cookie(FORM_COOKIE, path="/app")
    return response


def to_second_step(
    request: Request, runtime: Runtime, user: User, method: str, form: dict[str, str]
) -> Response:
    """The answer to a right first factor of an account with a second factor: the pending
    sign-in cookie, and the second step's page."""
    carried = {name: form[name] for name in CARRIED if form.get(name)}
    target = f"{SECOND_STEP_PATH}?{urlencode(carried)}" if carried else SECOND_STEP_PATH
    response = redirect(request, target)
    value = PendingSignIns(runtime.settings.signing_key).issue(user, method, runtime.clock.now())
    response.set_cookie(
        PENDING_COOKIE,
        value,
        path="/app",
        httponly=True,
        samesite="lax",
        secure=secure(request),
        max_age=int(PENDING_LIFETIME.total_seconds()),
    )
    return response


async def _join(
    request: Request, session: AsyncSession, runtime: Runtime, user: User, token: str | None
) -> str | None:
    """Accept the invitation the sign-in form carried; what to say (in ``user``'s language),
    or None without one."""
    if not token:
        return None
    words = words_for(request, user)
    try:
        project_id = await accept_invitation(session, runtime, user, token)
    except NotFound:
        raise ValidationFailed.on(
            "", words.gettext("this invitation is not for this account, or it was used already")
        ) from None
    project = await ProjectService(session, runtime).joined(user, project_id)
    return words.gettext("You joined %(name)s.") % {"name": project.project.name}


@router.get("")
async def home(request: Request, visitor: Visitor) -> Response:
    return redirect(request, "/app/dashboard" if visitor else "/app/login")


@router.get("/login")
async def login_page(request: Request, visitor: Visitor) -> Response:
    wanted = request.query_params.get("next", "")
    if visitor:
        return redirect(request, after_sign_in(wanted))
    invitation = request.query_params.get("invitation", "")
    return _sign_in_page(request, SIGN_IN, form={"invitation": invitation, "next": wanted})


@router.post("/login", openapi_extra=offers("login"))
async def login(
    request: Request, session: Session, runtime: RuntimeDep, client: ClientAddress
) -> Response:
    form = await _sign_in_form(request, SIGN_IN)
    accounts = AccountService(session, runtime)
    try:
        user = await accounts.first_factor(form.get("email", ""), form.get("password", ""), client)
        if await has_second_factor(session, user):
            # The password alone is not a session: the second step finishes it.
            return to_second_step(request, runtime, user, "password", form)
        await accounts.signed_in(user, client, None)
        joined = await _join(request, session, runtime, user, form.get("invitation"))
    except ProblemError as exc:
        return _form_again(request, session, SIGN_IN, form, exc)
    flash = joined or words_for(request, user).gettext("Signed in.")
    return await _start_session(request, session, runtime, user, flash, form.get("next"))


@router.get("/signup")
async def signup_page(request: Request, visitor: Visitor) -> Response:
    if visitor:
        return redirect(request, "/app/dashboard")
    invitation = request.query_params.get("invitation", "")
    return _sign_in_page(request, SIGN_UP, form={"invitation": invitation})


@router.post("/signup", openapi_extra=offers("signup"))
async def signup(request: Request, session: Session, runtime: RuntimeDep) -> Response:
    form = await _sign_in_form(request, SIGN_UP)
    fields = {k: form[k] for k in ("email", "password", "firstName") if form.get(k)}
    if form.get("invitation"):
        fields["invitationToken"] = form["invitation"]
    try:
        user = await AccountService(session, runtime).signup(SignupRequest(**fields))
        joined = await _join(request, session, runtime, user, form.get("invitation"))
    except (ProblemError, ValidationError) as exc:
        return _form_again(request, session, SIGN_UP, form, exc)
    welcome = words_for(request, user).gettext("Welcome to Upwatch.")
    if joined:
        welcome = f"{welcome} {joined}"
    return await _start_session(request, session, runtime, user, welcome)


@router.post("/logout", openapi_extra=offers("logout"))
async def logout(page: SignedInPage) -> Response:
    await page.form()
    token = page.request.cookies.get(SESSION_COOKIE)
    await ConsoleSessions(page.session, page.runtime).close(token)
    response = page.redirect("/app/login", page.gettext("Signed out."))
    response.delete_cookie(SESSION_COOKIE, path="/app")
    return response


@links.get("/reset-password")
async def reset_link(request: Request) -> Response:
    return redirect(request, f"/app/reset-password?{request.url.query}")


@links.get("/invitations/accept")
async def invitation_link(request: Request) -> Response:
    return redirect(request, f"/app/invitations/accept?{request.url.query}")


class EarlierIncidentLinks:
    """Alerts sent before the console existed link to ``/docs?incident={id}`` (the API
    document at the incident operation); a browser following one now gets the console's
    incident page. ``/docs`` itself is FastAPI's own route, so this stands before routing."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/docs" and scope["method"] == "GET":
            incident = parse_qs(scope["query_string"].decode("latin-1")).get("incident")
            if incident and incident[0]:
                target = f"/app/incidents/{quote(incident[0][:64], safe='')}"
                await RedirectResponse(target, status_code=303)(scope, receive, send)
                return
        await self.app(scope, receive, send)


@links.get("/contact/{submission_id}")
async def contact_link(submission_id: str, request: Request) -> Response:
    """The operators' e-mail about a contact submission links here. A browser (it asks for
    HTML) goes on to the console's page of it; to anything else this stays the API's path,
    where only PATCH is allowed."""
    if "text/html" not in request.headers.get("accept", ""):
        raise HTTPException(status_code=405)
    return redirect(request, f"/app/admin/contact/{quote(submission_id, safe='')}")


@router.get("/forgot-password")
async def forgot_page(request: Request) -> Response:
    return _sign_in_page(request, FORGOT)


@router.post("/forgot-password", openapi_extra=offers("forgotPassword"))
async def forgot(
    request: Request, runtime: RuntimeDep, client: ClientAddress, background: BackgroundTasks
) -> Response:
    form = await _sign_in_form(request, FORGOT)
    email = form.get("email", "")[:320]
    # The same answer whether or not the account exists, as the API gives.
    if email and await accept_reset_request(runtime, email, client):
        background.add_task(send_reset_link, runtime, email)
    sent = words_for(request).gettext(
        "If an account exists for this address, a reset link was sent."
    )
    return redirect(request, "/app/login", sent)


@router.get("/reset-password")
async def reset_page(request: Request) -> Response:
    token = request.query_params.get("token", "")
    return _sign_in_page(request, RESET, form={"token": token})


@router.post("/reset-password", openapi_extra=offers("resetPassword"))
async def reset(request: Request, session: Session, runtime: RuntimeDep) -> Response:
    form = await _sign_in_form(request, RESET)
    try:
        body = ResetPasswordRequest(
            token=form.get("token", ""), newPassword=form.get("password", "")
        )
        await AccountService(session, runtime).reset_password(body.token, body.newPassword)
    except (ProblemError, ValidationError) as exc:
        discard_changes(session)
        said = errors_of(exc, words_for(request))
        errors = {"password" if k == "newPassword" else k: v for k, v in said.items()}
        return _sign_in_page(request, RESET, status_of(exc), form=form, errors=errors)
    changed = words_for(request).gettext("Password changed: sign in with the new one.")
    return redirect(request, "/app/login", changed)


def _invitation_page(
    request: Request, visitor: SignedIn | None, token: str, status: int = 200, **more: Any
) -> Response:
    me = visitor.user if visitor else None
    return html(
        request,
        "invitation.html",
        status,
        title=words_for(request, me).gettext("Join a project"),
        me=me,
        csrf=visitor.csrf if visitor else "",
        token=token,
        query=urlencode({"invitation": token}),
        **more,
    )


@router.get("/invitations/accept")
async def invitation_page(request: Request, visitor: Visitor) -> Response:
    return _invitation_page(request, visitor, request.query_params.get("token", ""))


@router.post("/invitations/accept", openapi_extra=offers("acceptProjectInvitation"))
async def accept(page: SignedInPage) -> Response:
    form = await page.form()
    try:
        joined = await _join(page.request, page.session, page.runtime, page.user, form.get("token"))
    except ProblemError as exc:
        status, errors = page.refused(exc, N_("invitation"))
        token = form.get("token", "")
        return _invitation_page(page.request, page.visitor, token, status, errors=errors)
    return page.redirect("/app/projects", joined)
