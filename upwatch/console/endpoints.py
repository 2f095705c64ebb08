"""The web console's pages under /app (docs/console.md).

Every read and every form works without JavaScript: a form posts, the server acts through
the same domain services as the API, and answers with a redirect and a flash message (or the
form again, each error next to its field). A script only refreshes marked parts of a page.

Sessions are cookies (``console/service.py``); every form that changes state carries the
session's CSRF token, and the sign-in and sign-up forms one of a cookie of their own (double
submit). The bearer API never reads these cookies.
"""

from __future__ import annotations

from typing import Annotated, Any, Final
from urllib.parse import urlencode

from fastapi import APIRouter, BackgroundTasks, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from pydantic import TypeAdapter, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.accounts.schemas import ResetPasswordRequest, SignupRequest
from upwatch.accounts.service import AccountService, accept_reset_request, send_reset_link
from upwatch.console.render import POLICY, STATIC, page
from upwatch.console.service import ConsoleSessions, SignedIn, new_csrf_token, same_token
from upwatch.dependencies import ClientAddress, RuntimeDep, Session
from upwatch.incidents.repository import IncidentRepository
from upwatch.incidents.schemas import IncidentPatch, IncidentUpdateCreate
from upwatch.incidents.service import IncidentService
from upwatch.kit.db import discard_changes
from upwatch.kit.errors import NotFound, ProblemError, ValidationFailed, field_errors
from upwatch.monitors import dashboard
from upwatch.monitors.repository import MonitorRepository
from upwatch.monitors.schemas import MonitorCreate
from upwatch.monitors.service import MonitorService
from upwatch.projects.schemas import InviteRequest, ProjectCreate
from upwatch.projects.service import ProjectService, accept_invitation
from upwatch.runtime import Runtime

SESSION_COOKIE: Final = "upwatch_session"
FORM_COOKIE: Final = "upwatch_form"  # the sign-in forms' CSRF token, before any session
FLASH_COOKIE: Final = "upwatch_flash"
STATIC_FILES: Final = {"console.js": "text/javascript", "console.css": "text/css"}
SORTS: Final = ("name", "status", "uptime")
STATUS_ORDER: Final = {"down": 0, "degraded": 1, "pending": 2, "up": 3, "paused": 4}
RECENT_CHECKS: Final = 20

router = APIRouter(prefix="/app", include_in_schema=False)
_NEW_MONITOR: TypeAdapter[Any] = TypeAdapter(MonitorCreate)


# ---- responses ---------------------------------------------------------------------------


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def _html(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    flash = request.cookies.get(FLASH_COOKIE)
    context.setdefault("me", None)
    context.setdefault("csrf", "")
    context.setdefault("section", "")
    context.setdefault("errors", {})
    context.setdefault("form", {})
    response = HTMLResponse(page(template, flash=flash, **context), status_code=status)
    response.headers["Content-Security-Policy"] = POLICY
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "same-origin"
    if flash:
        response.delete_cookie(FLASH_COOKIE, path="/app")
    return response


def _fragment(request: Request, template: str, **context: Any) -> HTMLResponse:
    response = HTMLResponse(page(template, **context))
    response.headers["Cache-Control"] = "no-store"
    return response


def _redirect(request: Request, url: str, flash: str | None = None) -> RedirectResponse:
    response = RedirectResponse(url, status_code=303)
    if flash:
        response.set_cookie(
            FLASH_COOKIE,
            flash,
            path="/app",
            httponly=True,
            samesite="lax",
            secure=_secure(request),
            max_age=60,
        )
    return response


def _errors_of(exc: ProblemError | ValidationError) -> dict[str, str]:
    """The API's problem document as messages by form field ("" for the page)."""
    if isinstance(exc, ValidationError):
        return {e.field: e.message for e in field_errors(exc.errors())}
    if isinstance(exc, ValidationFailed) and exc.errors:
        return {e.field: e.message for e in exc.errors}
    return {"": exc.detail or exc.title}


async def _form(request: Request) -> dict[str, str]:
    form = await request.form()
    return {key: value for key, value in form.items() if isinstance(value, str)}


# ---- who is signed in --------------------------------------------------------------------


async def _signed_in(request: Request, session: Session, runtime: RuntimeDep) -> SignedIn | None:
    return await ConsoleSessions(session, runtime).resolve(request.cookies.get(SESSION_COOKIE))


Visitor = Annotated[SignedIn | None, Depends(_signed_in)]


def _to_login(request: Request) -> RedirectResponse:
    return _redirect(request, "/app/login", "Sign in to continue.")


def _refused(request: Request, visitor: SignedIn, form: dict[str, str]) -> Response | None:
    """A 403 page for a form without this session's CSRF token."""
    if same_token(form.get("csrf"), visitor.csrf):
        return None
    return _html(
        request,
        "error.html",
        403,
        title="The form has expired",
        detail="This form was not sent from the console page it belongs to (or that page is "
        "too old). Reload the page and try again.",
        me=visitor.user,
        csrf=visitor.csrf,
    )


# ---- signing in and out ------------------------------------------------------------------


def _form_token(request: Request) -> str:
    return request.cookies.get(FORM_COOKIE) or new_csrf_token()


def _sign_in_page(
    request: Request, template: str, title: str, status: int = 200, **context: Any
) -> HTMLResponse:
    token = _form_token(request)
    response = _html(request, template, status, title=title, csrf=token, **context)
    response.set_cookie(
        FORM_COOKIE, token, path="/app", httponly=True, samesite="strict", secure=_secure(request)
    )
    return response


async def _start_session(
    request: Request, session: AsyncSession, runtime: Runtime, user: Any, flash: str
) -> RedirectResponse:
    token = await ConsoleSessions(session, runtime).open(user)
    response = _redirect(request, "/app/monitors", flash)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        path="/app",
        httponly=True,
        samesite="lax",
        secure=_secure(request),
        max_age=14 * 24 * 3600,
    )
    response.delete_cookie(FORM_COOKIE, path="/app")
    return response


@router.get("")
async def home(request: Request, visitor: Visitor) -> Response:
    return _redirect(request, "/app/monitors" if visitor else "/app/login")


@router.get("/login")
async def login_page(request: Request, visitor: Visitor) -> Response:
    if visitor:
        return _redirect(request, "/app/monitors")
    invitation = request.query_params.get("invitation", "")
    return _sign_in_page(request, "login.html", "Sign in", form={"invitation": invitation})


@router.post("/login")
async def login(
    request: Request, session: Session, runtime: RuntimeDep, client: ClientAddress
) -> Response:
    form = await _form(request)
    if not same_token(form.get("csrf"), request.cookies.get(FORM_COOKIE) or ""):
        return _sign_in_page(
            request, "login.html", "Sign in", 403, form=form, errors={"": "Reload and retry."}
        )
    try:
        user = await AccountService(session, runtime).login(
            form.get("email", ""), form.get("password", ""), client
        )
        joined = await _join(session, runtime, user, form.get("invitation"))
    except ProblemError as exc:
        discard_changes(session)
        return _sign_in_page(
            request, "login.html", "Sign in", exc.status, form=form, errors=_errors_of(exc)
        )
    return await _start_session(request, session, runtime, user, joined or "Signed in.")


async def _join(
    session: AsyncSession, runtime: Runtime, user: Any, token: str | None
) -> str | None:
    """Accept the invitation the sign-in form carried; what to say, or None without one."""
    if not token:
        return None
    try:
        project_id = await accept_invitation(session, runtime, user, token)
    except NotFound:
        raise ValidationFailed.on(
            "", "this invitation is not for this account, or it was used already"
        ) from None
    project = await ProjectService(session, runtime).visible(user, project_id)
    return f"You joined {project.project.name}."


@router.get("/signup")
async def signup_page(request: Request, visitor: Visitor) -> Response:
    if visitor:
        return _redirect(request, "/app/monitors")
    invitation = request.query_params.get("invitation", "")
    return _sign_in_page(
        request, "signup.html", "Create an account", form={"invitation": invitation}
    )


@router.post("/signup")
async def signup(request: Request, session: Session, runtime: RuntimeDep) -> Response:
    form = await _form(request)
    title = "Create an account"
    if not same_token(form.get("csrf"), request.cookies.get(FORM_COOKIE) or ""):
        return _sign_in_page(
            request, "signup.html", title, 403, form=form, errors={"": "Reload and retry."}
        )
    fields = {k: form[k] for k in ("email", "password", "firstName") if form.get(k)}
    if form.get("invitation"):
        fields["invitationToken"] = form["invitation"]
    try:
        user = await AccountService(session, runtime).signup(SignupRequest(**fields))
        joined = await _join(session, runtime, user, form.get("invitation"))
    except (ProblemError, ValidationError) as exc:
        discard_changes(session)
        status = exc.status if isinstance(exc, ProblemError) else 422
        return _sign_in_page(
            request, "signup.html", title, status, form=form, errors=_errors_of(exc)
        )
    welcome = "Welcome to Upwatch." + (f" {joined}" if joined else "")
    return await _start_session(request, session, runtime, user, welcome)


@router.post("/logout")
async def logout(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    refused = _refused(request, visitor, await _form(request))
    if refused:
        return refused
    await ConsoleSessions(session, runtime).close(request.cookies.get(SESSION_COOKIE))
    response = _redirect(request, "/app/login", "Signed out.")
    response.delete_cookie(SESSION_COOKIE, path="/app")
    return response


# ---- the links e-mails carry: password reset, invitations -----------------------------------

# The e-mails link to these paths (contract §4 fixes the reset link); the console serves them.
links = APIRouter(include_in_schema=False)


@links.get("/reset-password")
async def reset_link(request: Request) -> Response:
    return _redirect(request, f"/app/reset-password?{request.url.query}")


@links.get("/invitations/accept")
async def invitation_link(request: Request) -> Response:
    return _redirect(request, f"/app/invitations/accept?{request.url.query}")


@router.get("/forgot-password")
async def forgot_page(request: Request) -> Response:
    return _sign_in_page(request, "forgot.html", "Forgot your password?")


@router.post("/forgot-password")
async def forgot(
    request: Request, runtime: RuntimeDep, client: ClientAddress, background: BackgroundTasks
) -> Response:
    form = await _form(request)
    title = "Forgot your password?"
    if not same_token(form.get("csrf"), request.cookies.get(FORM_COOKIE) or ""):
        return _sign_in_page(
            request, "forgot.html", title, 403, form=form, errors={"": "Reload and retry."}
        )
    email = form.get("email", "")[:320]
    # The same answer whether or not the account exists, as the API gives.
    if email and await accept_reset_request(runtime, email, client):
        background.add_task(send_reset_link, runtime, email)
    return _redirect(
        request, "/app/login", "If an account exists for this address, a reset link was sent."
    )


@router.get("/reset-password")
async def reset_page(request: Request) -> Response:
    token = request.query_params.get("token", "")
    return _sign_in_page(request, "reset.html", "Choose a new password", form={"token": token})


@router.post("/reset-password")
async def reset(request: Request, session: Session, runtime: RuntimeDep) -> Response:
    form = await _form(request)
    title = "Choose a new password"
    if not same_token(form.get("csrf"), request.cookies.get(FORM_COOKIE) or ""):
        return _sign_in_page(
            request, "reset.html", title, 403, form=form, errors={"": "Reload and retry."}
        )
    try:
        body = ResetPasswordRequest(
            token=form.get("token", ""), newPassword=form.get("password", "")
        )
        await AccountService(session, runtime).reset_password(body.token, body.newPassword)
    except (ProblemError, ValidationError) as exc:
        discard_changes(session)
        status = exc.status if isinstance(exc, ProblemError) else 422
        errors = {"password" if k == "newPassword" else k: v for k, v in _errors_of(exc).items()}
        return _sign_in_page(request, "reset.html", title, status, form=form, errors=errors)
    return _redirect(request, "/app/login", "Password changed: sign in with the new one.")


@router.get("/invitations/accept")
async def invitation_page(request: Request, visitor: Visitor) -> Response:
    token = request.query_params.get("token", "")
    return _html(
        request,
        "invitation.html",
        title="Join a project",
        me=visitor.user if visitor else None,
        csrf=visitor.csrf if visitor else "",
        token=token,
        query=urlencode({"invitation": token}),
    )


@router.post("/invitations/accept")
async def accept(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    form = await _form(request)
    refused = _refused(request, visitor, form)
    if refused:
        return refused
    try:
        joined = await _join(session, runtime, visitor.user, form.get("token"))
    except ProblemError as exc:
        discard_changes(session)
        return _html(
            request,
            "invitation.html",
            exc.status,
            title="Join a project",
            me=visitor.user,
            csrf=visitor.csrf,
            token=form.get("token", ""),
            query=urlencode({"invitation": form.get("token", "")}),
            errors=_errors_of(exc),
        )
    return _redirect(request, "/app/projects", joined)


# ---- projects ----------------------------------------------------------------------------


async def _projects(session: AsyncSession, runtime: Runtime, visitor: SignedIn) -> list[Any]:
    accesses, _total = await ProjectService(session, runtime).list(visitor.user, 1000, 0)
    return accesses


@router.get("/projects")
async def projects_page(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    return _html(
        request,
        "projects.html",
        title="Projects",
        section="projects",
        me=visitor.user,
        csrf=visitor.csrf,
        projects=await _projects(session, runtime, visitor),
    )


@router.post("/projects")
async def create_project(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    form = await _form(request)
    refused = _refused(request, visitor, form)
    if refused:
        return refused
    try:
        body = ProjectCreate(name=form.get("name", ""))
        await ProjectService(session, runtime).create(visitor.user, body)
    except (ProblemError, ValidationError) as exc:
        discard_changes(session)
        return _html(
            request,
            "projects.html",
            exc.status if isinstance(exc, ProblemError) else 422,
            title="Projects",
            section="projects",
            me=visitor.user,
            csrf=visitor.csrf,
            projects=await _projects(session, runtime, visitor),
            form=form,
            errors=_errors_of(exc),
        )
    return _redirect(request, "/app/monitors/new", f"Project {body.name} created.")


async def _project_page(
    request: Request,
    session: AsyncSession,
    runtime: Runtime,
    visitor: SignedIn,
    project_id: str,
    status: int = 200,
    **context: Any,
) -> Response:
    service = ProjectService(session, runtime)
    try:
        access = await service.visible(visitor.user, project_id)
        members, invitations = await service.members(visitor.user, project_id)
    except ProblemError:
        return _not_found(request, visitor, "project")
    return _html(
        request,
        "project.html",
        status,
        title=access.project.name,
        section="projects",
        me=visitor.user,
        csrf=visitor.csrf,
        access=access,
        members=members,
        invitations=invitations,
        **context,
    )


@router.get("/projects/{project_id}")
async def project_page(
    project_id: str, request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    return await _project_page(request, session, runtime, visitor, project_id)


@router.post("/projects/{project_id}/invite")
async def invite(
    project_id: str, request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    form = await _form(request)
    refused = _refused(request, visitor, form)
    if refused:
        return refused
    try:
        body = InviteRequest(email=form.get("email", ""))
        _made, member = await ProjectService(session, runtime).invite(
            visitor.user, project_id, body.email
        )
    except (ProblemError, ValidationError) as exc:
        discard_changes(session)
        if isinstance(exc, ProblemError) and exc.status == 404:
            return _not_found(request, visitor, "project")
        status = exc.status if isinstance(exc, ProblemError) else 422
        return await _project_page(
            request,
            session,
            runtime,
            visitor,
            project_id,
            status,
            form=form,
            errors=_errors_of(exc),
        )
    done = f"{body.email} added." if member else f"Invitation sent to {body.email}."
    return _redirect(request, f"/app/projects/{project_id}", done)


@router.post("/projects/{project_id}/members/{user_id}/remove")
async def remove_member(
    project_id: str,
    user_id: str,
    request: Request,
    session: Session,
    runtime: RuntimeDep,
    visitor: Visitor,
) -> Response:
    if visitor is None:
        return _to_login(request)
    refused = _refused(request, visitor, await _form(request))
    if refused:
        return refused
    try:
        await ProjectService(session, runtime).remove_member(visitor.user, project_id, user_id)
    except ProblemError as exc:
        discard_changes(session)
        if exc.status == 404:
            return _not_found(request, visitor, "member")
        return _redirect(request, f"/app/projects/{project_id}", f"Not removed: {exc.detail}")
    if user_id == visitor.user.id:
        return _redirect(request, "/app/projects", "You left the project.")
    return _redirect(request, f"/app/projects/{project_id}", "Member removed.")


# ---- monitors ----------------------------------------------------------------------------


async def _monitor_rows(
    session: AsyncSession, runtime: Runtime, visitor: SignedIn, query: dict[str, str]
) -> list[dict[str, Any]]:
    project = query.get("project") or None
    repository = MonitorRepository(session)
    monitors = await repository.visible_all(visitor.user, project)
    if query.get("status"):
        monitors = [m for m in monitors if m.status == query["status"]]
    uptime = await dashboard.uptime_24h(session, [m.id for m in monitors], runtime.clock.now())
    rows = []
    for monitor in monitors:
        recent, _ = await repository.results(monitor.id, None, None, None, RECENT_CHECKS, 0)
        rows.append(
            {
                "id": monitor.id,
                "name": monitor.name,
                "status": monitor.status,
                "lastCheckedAt": monitor.last_checked_at,
                "uptime24h": uptime.get(monitor.id),
                "times": [r.response_time_ms for r in reversed(recent)],
            }
        )
    sort = query.get("sort") or "name"
    if sort == "status":
        rows.sort(key=lambda r: (STATUS_ORDER.get(str(r["status"]), 9), str(r["name"]).lower()))
    elif sort == "uptime":
        rows.sort(key=lambda r: (r["uptime24h"] is None, r["uptime24h"] or 0.0))
    else:
        rows.sort(key=lambda r: str(r["name"]).lower())
    return rows


def _monitor_query(request: Request) -> dict[str, str]:
    params = request.query_params
    sort = params.get("sort", "name")
    return {
        "project": params.get("project", ""),
        "status": params.get("status", ""),
        "sort": sort if sort in SORTS else "name",
    }


@router.get("/monitors")
async def monitors_page(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    query = _monitor_query(request)
    return _html(
        request,
        "monitors.html",
        title="Monitors",
        section="monitors",
        me=visitor.user,
        csrf=visitor.csrf,
        query=query,
        query_string=urlencode(query),
        filtered=bool(query["project"] or query["status"]),
        projects=await _projects(session, runtime, visitor),
        rows=await _monitor_rows(session, runtime, visitor, query),
    )


@router.get("/monitors/rows")
async def monitor_rows(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return Response(status_code=401)
    query = _monitor_query(request)
    rows = await _monitor_rows(session, runtime, visitor, query)
    filtered = bool(query["project"] or query["status"])
    return _fragment(request, "_monitor_rows.html", rows=rows, filtered=filtered)


@router.get("/monitors/new")
async def new_monitor_page(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    return _html(
        request,
        "monitor_new.html",
        title="New monitor",
        section="monitors",
        me=visitor.user,
        csrf=visitor.csrf,
        projects=await _projects(session, runtime, visitor),
    )


def _monitor_body(form: dict[str, str]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "projectId": form.get("projectId", ""),
        "name": form.get("name", ""),
        "type": form.get("type", "http"),
    }
    if body["type"] == "http":
        body["url"] = form.get("url", "")
    else:
        body["host"] = form.get("host", "")
        body["port"] = form.get("port") or None
    if form.get("intervalSeconds"):
        body["intervalSeconds"] = form["intervalSeconds"]
    return body


@router.post("/monitors/new")
async def create_monitor(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    form = await _form(request)
    refused = _refused(request, visitor, form)
    if refused:
        return refused
    try:
        body = _NEW_MONITOR.validate_python(_monitor_body(form))
        monitor = await MonitorService(session, runtime).create(visitor.user, body)
    except (ProblemError, ValidationError) as exc:
        discard_changes(session)
        return _html(
            request,
            "monitor_new.html",
            exc.status if isinstance(exc, ProblemError) else 422,
            title="New monitor",
            section="monitors",
            me=visitor.user,
            csrf=visitor.csrf,
            projects=await _projects(session, runtime, visitor),
            form=form,
            errors=_errors_of(exc),
        )
    return _redirect(request, f"/app/monitors/{monitor.id}", f"Monitor {monitor.name} created.")


async def _monitor_state(
    session: AsyncSession, runtime: Runtime, visitor: SignedIn, monitor_id: str
) -> dict[str, Any]:
    monitor = await MonitorService(session, runtime).visible(visitor.user, monitor_id)
    repository = MonitorRepository(session)
    checks, _ = await repository.results(monitor.id, None, None, None, RECENT_CHECKS, 0)
    timings = await repository.timings([c.id for c in checks])
    uptime = await dashboard.uptime_24h(session, [monitor.id], runtime.clock.now())
    return {
        "monitor": monitor,
        "checks": checks,
        "timings": timings,
        "uptime": uptime.get(monitor.id),
    }


def _not_found(request: Request, visitor: SignedIn, what: str) -> HTMLResponse:
    return _html(
        request,
        "error.html",
        404,
        title="Not found",
        detail=f"There is no such {what}, or it is not in your projects.",
        me=visitor.user,
        csrf=visitor.csrf,
    )


@router.get("/monitors/{monitor_id}")
async def monitor_page(
    monitor_id: str, request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    try:
        state = await _monitor_state(session, runtime, visitor, monitor_id)
    except ProblemError:
        return _not_found(request, visitor, "monitor")
    return _html(
        request,
        "monitor.html",
        title=state["monitor"].name,
        section="monitors",
        me=visitor.user,
        csrf=visitor.csrf,
        **state,
    )


@router.get("/monitors/{monitor_id}/state")
async def monitor_state(
    monitor_id: str, request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return Response(status_code=401)
    try:
        state = await _monitor_state(session, runtime, visitor, monitor_id)
    except ProblemError:
        return Response(status_code=404)
    return _fragment(request, "_monitor_state.html", **state)


@router.post("/monitors/{monitor_id}/check")
async def check_monitor(
    monitor_id: str, request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    refused = _refused(request, visitor, await _form(request))
    if refused:
        return refused
    try:
        result = await MonitorService(session, runtime).check_now(visitor.user, monitor_id)
    except ProblemError as exc:
        discard_changes(session)
        if exc.status == 404:
            return _not_found(request, visitor, "monitor")
        return _redirect(request, f"/app/monitors/{monitor_id}", f"Not checked: {exc.detail}")
    code = f", HTTP {result.status_code}" if result.status_code else ""
    text = f"Checked now: {result.status}{code}"
    return _redirect(request, f"/app/monitors/{monitor_id}", text)


# ---- incidents ---------------------------------------------------------------------------


async def _incidents(session: AsyncSession, visitor: SignedIn) -> list[Any]:
    items, _total = await IncidentRepository(session).visible_to(
        visitor.user, None, None, None, 100, 0
    )
    return list(items)


@router.get("/incidents")
async def incidents_page(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    return _html(
        request,
        "incidents.html",
        title="Incidents",
        section="incidents",
        me=visitor.user,
        csrf=visitor.csrf,
        incidents=await _incidents(session, visitor),
    )


@router.get("/incidents/rows")
async def incident_rows(request: Request, session: Session, visitor: Visitor) -> Response:
    if visitor is None:
        return Response(status_code=401)
    return _fragment(request, "_incident_rows.html", incidents=await _incidents(session, visitor))


async def _incident_page(
    request: Request,
    session: AsyncSession,
    runtime: Runtime,
    visitor: SignedIn,
    incident_id: str,
    status: int = 200,
    **context: Any,
) -> Response:
    try:
        incident = await IncidentService(session, runtime).visible(visitor.user, incident_id)
    except ProblemError:
        return _not_found(request, visitor, "incident")
    updates = (await IncidentRepository(session).updates_of([incident.id])).get(incident.id, [])
    return _html(
        request,
        "incident.html",
        status,
        title=incident.title,
        section="incidents",
        me=visitor.user,
        csrf=visitor.csrf,
        incident=incident,
        updates=updates,
        **context,
    )


@router.get("/incidents/{incident_id}")
async def incident_page(
    incident_id: str, request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    if visitor is None:
        return _to_login(request)
    return await _incident_page(request, session, runtime, visitor, incident_id)


async def _incident_action(
    request: Request,
    session: AsyncSession,
    runtime: Runtime,
    visitor: SignedIn | None,
    incident_id: str,
    action: str,
) -> Response:
    if visitor is None:
        return _to_login(request)
    form = await _form(request)
    refused = _refused(request, visitor, form)
    if refused:
        return refused
    service = IncidentService(session, runtime)
    try:
        if action == "acknowledge":
            await service.acknowledge(visitor.user, incident_id)
            done = "Acknowledged."
        elif action == "resolve":
            await service.update(visitor.user, incident_id, IncidentPatch(status="resolved"))
            done = "Resolved."
        else:
            body = IncidentUpdateCreate(message=form.get("message", ""))
            await service.add_update(visitor.user, incident_id, body)
            done = "Update posted."
    except (ProblemError, ValidationError) as exc:
        discard_changes(session)
        if isinstance(exc, ProblemError) and exc.status == 404:
            return _not_found(request, visitor, "incident")
        status = exc.status if isinstance(exc, ProblemError) else 422
        errors = _errors_of(exc)
        return await _incident_page(
            request, session, runtime, visitor, incident_id, status, form=form, errors=errors
        )
    return _redirect(request, f"/app/incidents/{incident_id}", done)


@router.post("/incidents/{incident_id}/acknowledge")
async def acknowledge(
    incident_id: str, request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    return await _incident_action(request, session, runtime, visitor, incident_id, "acknowledge")


@router.post("/incidents/{incident_id}/resolve")
async def resolve(
    incident_id: str, request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    return await _incident_action(request, session, runtime, visitor, incident_id, "resolve")


@router.post("/incidents/{incident_id}/updates")
async def post_update(
    incident_id: str, request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> Response:
    return await _incident_action(request, session, runtime, visitor, incident_id, "update")


# ---- static assets -----------------------------------------------------------------------


@router.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in STATIC_FILES:
        return Response(status_code=404)
    return FileResponse(
        STATIC / name,
        media_type=STATIC_FILES[name],
        headers={"Cache-Control": "public, max-age=300"},
    )
