"""What every console page shares: who is signed in, the responses, forms and their errors.

A page's handler takes a ``SignedInPage`` (or a ``FragmentPage`` for the parts the script
refreshes). Anything decided before the handler's own work (no session: to the sign-in page;
a form without this session's CSRF token: a 403 page; an object outside the visitor's
projects: a 404 page) is raised as an ``Answer``, which ends the request in a rollback and
sends that response.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Final, NoReturn
from urllib.parse import quote, unquote, urlencode, urlsplit

from fastapi import BackgroundTasks, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.console.render import POLICY, page, words_in
from upwatch.console.service import ConsoleSessions, SignedIn, same_token, touch_session
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.db import discard_changes
from upwatch.kit.errors import ProblemError, TwoFactorRequired, ValidationFailed, field_errors
from upwatch.kit.languages import LANGUAGES, SOURCE, negotiate
from upwatch.kit.validation_words import ENGLISH, Say
from upwatch.models import User
from upwatch.runtime import Runtime
from upwatch.statuspages.render import Words

SESSION_COOKIE: Final = "upwatch_session"
# Where a person turns on a second factor (the account's security settings).
SECURITY_SETTINGS: Final = "/app/settings/security"
FLASH_COOKIE: Final = "upwatch_flash"


class Answer(Exception):
    """A response decided before (or instead of) the page's own: sent as it is."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


async def send_answer(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Answer)
    return exc.response


def secure(request: Request) -> bool:
    return request.url.scheme == "https"


def language_of(request: Request, user: User | None = None) -> str:
    """The language a console page speaks (docs/languages.md): the signed-in user's
    ``language`` setting; else (signed out, or no setting) the first of the ten the browser
    asks for; else English."""
    if user is not None:
        chosen = (user.settings or {}).get("language")
        if chosen in LANGUAGES:
            return str(chosen)
    return negotiate(request.headers.get("accept-language")) or SOURCE


def words_for(request: Request, user: User | None = None) -> Words:
    return words_in(language_of(request, user))


def html(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    kept = request.cookies.get(FLASH_COOKIE)
    flash = unquote(kept) if kept else None
    for name, empty in (("me", None), ("csrf", ""), ("section", ""), ("zone", "UTC")):
        context.setdefault(name, empty)
    context.setdefault("form", {})
    context.setdefault("errors", {})
    language = language_of(request, context["me"])
    response = HTMLResponse(page(template, language, flash=flash, **context), status_code=status)
    response.headers["Content-Language"] = language
    response.headers["Content-Security-Policy"] = POLICY
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "same-origin"
    if kept:
        response.delete_cookie(FLASH_COOKIE, path="/app")
    return response


def fragment(template: str, language: str = SOURCE, **context: Any) -> HTMLResponse:
    headers = {"Content-Security-Policy": POLICY, "Cache-Control": "no-store"}
    headers["Content-Language"] = language
    return HTMLResponse(page(template, language, **context), headers=headers)


def redirect(request: Request, url: str, flash: str | None = None) -> RedirectResponse:
    response = RedirectResponse(url, status_code=303)
    if flash:
        # Percent-encoded: a cookie carries Latin-1 only, and the message may name a project
        # or monitor in any script.
        response.set_cookie(
            FLASH_COOKIE,
            quote(flash),
            path="/app",
            httponly=True,
            samesite="lax",
            secure=secure(request),
            max_age=60,
        )
    return response


def errors_of(exc: ProblemError | ValidationError, say: Say = ENGLISH) -> dict[str, str]:
    """The API's problem document as messages by form field ("" for the page). The
    console's own validation of a form speaks the reader's language (``say``); a problem
    the API raised keeps its English (contract §3)."""
    if isinstance(exc, ValidationError):
        return {e.field: e.message for e in field_errors(exc.errors(), say=say)}
    if isinstance(exc, ValidationFailed) and exc.errors:
        return {e.field: e.message for e in exc.errors}
    return {"": exc.detail or exc.title}


def status_of(exc: ProblemError | ValidationError) -> int:
    return exc.status if isinstance(exc, ProblemError) else 422


def after_sign_in(wanted: str | None) -> str:
    """Where to go once signed in: the console page asked for, else the dashboard. Only a
    plain path under /app/ is followed (no host, no encoding, no dot segments, nothing a
    browser could resolve elsewhere), so the parameter cannot send anyone off the console."""
    if not wanted or any(c in wanted for c in "%\\") or not wanted.isprintable():
        return "/app/dashboard"
    parts = urlsplit(wanted)
    if parts.scheme or parts.netloc or parts.query or parts.fragment:
        return "/app/dashboard"
    if not parts.path.startswith("/app/") or posixpath.normpath(parts.path) != parts.path:
        return "/app/dashboard"
    return parts.path


async def read_form(request: Request) -> dict[str, str]:
    form = await request.form()
    return {key: value for key, value in form.items() if isinstance(value, str)}


@dataclass(frozen=True)
class Page:
    """One request from a signed-in visitor."""

    request: Request
    session: AsyncSession
    runtime: Runtime
    visitor: SignedIn

    @property
    def user(self) -> User:
        return self.visitor.user

    @property
    def zone(self) -> str:
        """The visitor's time zone (their settings): every time on their pages is in it."""
        return str((self.user.settings or {}).get("timezone") or "UTC")

    @functools.cached_property
    def words(self) -> Words:
        """The visitor's language: its texts, dates and numbers."""
        return words_for(self.request, self.user)

    def gettext(self, text: str) -> str:
        """``text`` (marked here for the catalogs) in the visitor's language."""
        return self.words.gettext(text)

    def html(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        me, csrf = self.visitor.user, self.visitor.csrf
        context.setdefault("zone", self.zone)
        return html(self.request, template, status, me=me, csrf=csrf, **context)

    def fragment(self, template: str, **context: Any) -> HTMLResponse:
        """A part of a page the script swaps in."""
        return fragment(template, self.words.language, zone=self.zone, **context)

    def redirect(self, url: str, flash: str | None = None) -> RedirectResponse:
        return redirect(self.request, url, flash)

    def not_found(self, what: str) -> NoReturn:
        """The 404 page about ``what`` (a noun marked with ``N_``: "monitor")."""
        raise Answer(
            self.html(
                "error.html",
                404,
                title=self.gettext("Not found"),
                detail=self.gettext("There is no such %(what)s, or it is not in your projects.")
                % {"what": self.gettext(what)},
            )
        )

    def two_factor_required(self) -> HTMLResponse:
        """The page of a project that requires a second factor the visitor lacks."""
        return self.html(
            "error.html",
            403,
            title=self.gettext("This project requires two-factor sign-in"),
            detail=self.gettext(
                "The owner of this project requires every member to sign in with a second "
                "factor. Turn on two-factor authentication (an authenticator app or a passkey) "
                "in your account's security settings, then open the project again."
            ),
            action=(SECURITY_SETTINGS, self.gettext("Turn on two-factor authentication")),
        )

    async def form(self) -> dict[str, str]:
        """The posted form, once it is known to come from this session's pages."""
        form = await read_form(self.request)
        if not same_token(form.get("csrf"), self.visitor.csrf):
            raise Answer(
                self.html(
                    "error.html",
                    403,
                    title=self.gettext("The form has expired"),
                    detail=self.gettext(
                        "This form was not sent from the console page it belongs to (or "
                        "that page is too old). Reload the page and try again."
                    ),
                )
            )
        return form

    def refused(self, exc: ProblemError | ValidationError, what: str) -> tuple[int, dict[str, str]]:
        """Keep nothing of a refused action; its status and errors by field to show with the
        form again (a 404 answers with the not-found page at once)."""
        discard_changes(self.session)
        if isinstance(exc, TwoFactorRequired):
            raise Answer(self.two_factor_required())
        if isinstance(exc, ProblemError) and exc.status == 404:
            self.not_found(what)
        return status_of(exc), errors_of(exc, self.words)

    @asynccontextmanager
    async def button(self, what: str, back: str, failed: str) -> AsyncIterator[None]:
        """Around a button's action (a form of no fields), run once the form is checked: an
        action refused sends the visitor back to ``back`` told "``failed``: why" (a 404
        answers with the not-found page about ``what``). ``what`` and ``failed`` are marked
        with ``N_`` and translated here."""
        await self.form()
        try:
            yield
        except ProblemError as exc:
            self.refused(exc, what)
            raise Answer(self.redirect(back, f"{self.gettext(failed)}: {exc.detail}")) from None


async def visitor_of(
    request: Request, session: Session, runtime: RuntimeDep, background: BackgroundTasks
) -> SignedIn | None:
    visitor = await ConsoleSessions(session, runtime).resolve(request.cookies.get(SESSION_COOKIE))
    if visitor is not None and visitor.touch_due:
        # After the response, in a transaction of its own: a page view stays a read.
        background.add_task(touch_session, runtime.db, visitor.session_id, runtime.clock.now())
    return visitor


Visitor = Annotated[SignedIn | None, Depends(visitor_of)]


async def _page(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> AsyncIterator[Page]:
    if visitor is None:
        back = urlencode({"next": request.url.path}) if request.method == "GET" else ""
        said = words_for(request).gettext("Sign in to continue.")
        raise Answer(redirect(request, f"/app/login?{back}".rstrip("?"), said))
    page = Page(request, session, runtime, visitor)
    async with _saying_why_refused(page):
        yield page


async def _fragment_page(
    request: Request, session: Session, runtime: RuntimeDep, visitor: Visitor
) -> AsyncIterator[Page]:
    # The script asks for fragments; without a session it gets no page to swap in.
    if visitor is None:
        raise Answer(Response(status_code=401))
    page = Page(request, session, runtime, visitor)
    async with _saying_why_refused(page):
        yield page


@asynccontextmanager
async def _saying_why_refused(page: Page) -> AsyncIterator[None]:
    """Every page of a project that requires a second factor the visitor lacks answers with
    the page that says so (403, with the way to the security settings), in this one place:
    whether the refusal left the handler, or the handler turned it into its not-found page
    (most lookups read any problem as "not found"; the refusal is then the answer's
    context). Run before the request's session closes, so the page can still be drawn."""
    try:
        yield
    except TwoFactorRequired:
        raise Answer(page.two_factor_required()) from None
    except Answer as answer:
        if isinstance(answer.__context__, TwoFactorRequired):
            raise Answer(page.two_factor_required()) from None
        raise


# scope="function": the page's exit runs before the session's (and before the response).
SignedInPage = Annotated[Page, Depends(_page, scope="function")]
FragmentPage = Annotated[Page, Depends(_fragment_page, scope="function")]
