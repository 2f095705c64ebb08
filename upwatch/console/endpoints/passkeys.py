"""Passkeys in the console: the visitor's list (add, remove), signing in with one instead of
the password, and giving one as the second factor of a pending sign-in (docs/passkeys.md).

A ceremony takes two requests: the script asks a route ending in ``/options`` for the
options of ``navigator.credentials.create`` or ``.get`` (JSON; the form's CSRF token in the
``X-CSRF-Token`` header; the challenge is set as a signed cookie), then posts the browser's
answer with the form it came from, as a hidden field. The form's post is an ordinary one:
its answer a redirect, or the page again with the error, as every console form gives.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.accounts.factors import PENDING_COOKIE
from upwatch.accounts.passkeys import CEREMONY_COOKIE, CEREMONY_LIFETIME, PasskeyService
from upwatch.accounts.service import AccountService
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import (
    Answer,
    FragmentPage,
    Page,
    SignedInPage,
    errors_of,
    read_form,
    secure,
    status_of,
    words_for,
)
from upwatch.console.endpoints.second_factor import (
    finish_sign_in,
    pending_account,
    second_step_answer,
)
from upwatch.console.endpoints.signin import FORM_COOKIE, SIGN_IN, _sign_in_page, _start_session
from upwatch.console.service import same_token
from upwatch.dependencies import ClientAddress, RuntimeDep, Session
from upwatch.kit.db import discard_changes
from upwatch.kit.errors import Forbidden, ProblemError
from upwatch.kit.languages import N_
from upwatch.models import User
from upwatch.runtime import Runtime

router = APIRouter(prefix="/app")
CSRF_HEADER: Final = "x-csrf-token"


def _ceremony(request: Request, options: str, cookie: str) -> Response:
    """The options for the browser, with the ceremony's challenge kept in a cookie."""
    response = Response(options, media_type="application/json")
    response.headers["Cache-Control"] = "no-store"
    response.set_cookie(
        CEREMONY_COOKIE,
        cookie,
        path="/app",
        httponly=True,
        samesite="strict",
        secure=secure(request),
        max_age=int(CEREMONY_LIFETIME.total_seconds()),
    )
    return response


def _script_token(request: Request, expected: str) -> None:
    """The options are asked by the console's own script, which sends the form's token."""
    if not expected or not same_token(request.headers.get(CSRF_HEADER), expected):
        raise Forbidden(
            words_for(request).gettext(
                "reload the page and try again (its form token is missing or old)"
            )
        )


# ---- the visitor's passkeys ----


async def passkeys_section(page: Page) -> dict[str, Any]:
    """What ``_passkeys.html`` shows: a page that includes it adds these to its context."""
    service = PasskeyService(page.session, page.runtime)
    return {"passkeys": await service.listed(page.user), "passkeys_usable": service.party.usable}


async def _passkeys_page(page: Page, status: int = 200, **context: Any) -> Response:
    return page.html(
        "passkeys.html",
        status,
        title=page.gettext("Passkeys"),
        section="settings",
        **await passkeys_section(page),
        **context,
    )


@router.get("/settings/passkeys", openapi_extra=offers("listPasskeys"))
async def passkeys_page(page: SignedInPage) -> Response:
    return await _passkeys_page(page)


@router.post("/settings/passkeys/options")
async def registration_options(page: FragmentPage) -> Response:
    _script_token(page.request, page.visitor.csrf)
    service = PasskeyService(page.session, page.runtime)
    options, cookie = await service.registration_options(page.user)
    return _ceremony(page.request, options, cookie)


@router.post("/settings/passkeys")
async def add_passkey(page: SignedInPage) -> Response:
    form = await page.form()
    try:
        await PasskeyService(page.session, page.runtime).register(
            page.user,
            page.request.cookies.get(CEREMONY_COOKIE),
            form.get("name", ""),
            form.get("credential", ""),
        )
    except ProblemError as exc:
        status, errors = page.refused(exc, N_("passkey"))
        return await _passkeys_page(page, status, form=form, errors=errors)
    response = page.redirect("/app/settings/passkeys", page.gettext("Passkey added."))
    response.delete_cookie(CEREMONY_COOKIE, path="/app")
    return response


@router.post("/settings/passkeys/{passkey_id}/remove", openapi_extra=offers("deletePasskey"))
async def remove_passkey(passkey_id: str, page: SignedInPage) -> Response:
    back = "/app/settings/passkeys"
    async with page.button(N_("passkey"), back, N_("Not removed")):
        await PasskeyService(page.session, page.runtime).remove(page.user, passkey_id)
    return page.redirect(back, page.gettext("Passkey removed: it no longer signs in."))


# ---- signing in with a passkey instead of the password ----


@router.post("/login/passkey/options")
async def sign_in_options(request: Request, session: Session, runtime: RuntimeDep) -> Response:
    _script_token(request, request.cookies.get(FORM_COOKIE) or "")
    options, cookie = await PasskeyService(session, runtime).sign_in_options(None)
    return _ceremony(request, options, cookie)


async def _signed_in_with_passkey(
    request: Request,
    session: AsyncSession,
    runtime: Runtime,
    client: str,
    form: dict[str, str],
    pending: User | None,
    first_factor: str = "password",
) -> Response:
    """Verify the posted assertion; on success the session starts as a password's would."""
    try:
        user = await PasskeyService(session, runtime).sign_in(
            request.cookies.get(CEREMONY_COOKIE),
            form.get("credential", ""),
            client,
            pending,
            first_factor,
        )
    except ProblemError as exc:
        # The failure's audit event stays (nothing else was changed).
        refused = errors_of(exc).get("")
        errors = {"": refused or words_for(request).gettext("The passkey was not accepted.")}
        if pending is None:
            return _sign_in_page(request, SIGN_IN, status_of(exc), form=form, errors=errors)
        return await second_step_answer(
            request, session, pending, form, status_of(exc), errors=errors
        )
    if pending is not None and first_factor == "password":
        # The password step's throttle slots, as a TOTP code's second step forgives them
        # (a provider's sign-in took none: nothing to give back, nor anyone else's).
        await AccountService(session, runtime).forgive_failures(user, client)
    response: Response
    if pending is None:
        signed_in = words_for(request, user).gettext("Signed in.")
        response = await _start_session(
            request, session, runtime, user, signed_in, form.get("next")
        )
    else:
        try:
            # As after a code: the invitation the password form carried is accepted too.
            response = await finish_sign_in(request, session, runtime, user, form)
        except ProblemError as exc:
            discard_changes(session)
            errors = {"": errors_of(exc).get("") or exc.title}
            return await second_step_answer(
                request, session, pending, form, status_of(exc), errors=errors
            )
    response.delete_cookie(CEREMONY_COOKIE, path="/app")
    response.delete_cookie(PENDING_COOKIE, path="/app")
    return response


@router.post("/login/passkey")
async def sign_in_with_passkey(
    request: Request, session: Session, runtime: RuntimeDep, client: ClientAddress
) -> Response:
    form = await read_form(request)
    if not same_token(form.get("csrf"), request.cookies.get(FORM_COOKIE) or ""):
        refused = {"": words_for(request).gettext("Reload and retry.")}
        return _sign_in_page(request, SIGN_IN, 403, form=form, errors=refused)
    return await _signed_in_with_passkey(request, session, runtime, client, form, None)


# ---- a passkey as the second factor of a pending sign-in ----


@router.post("/login/second-factor/passkey/options")
async def second_factor_options(
    request: Request, session: Session, runtime: RuntimeDep
) -> Response:
    _script_token(request, request.cookies.get(FORM_COOKIE) or "")
    pending = await _pending_or_none(request, session, runtime)
    if pending is None:
        raise Forbidden(words_for(request).gettext("this sign-in took too long: sign in again"))
    options, cookie = await PasskeyService(session, runtime).sign_in_options(pending[0])
    return _ceremony(request, options, cookie)


@router.post("/login/second-factor/passkey")
async def second_factor_passkey(
    request: Request, session: Session, runtime: RuntimeDep, client: ClientAddress
) -> Response:
    form = await read_form(request)
    user, pending = await pending_account(request, session, runtime)
    if not same_token(form.get("csrf"), request.cookies.get(FORM_COOKIE) or ""):
        refused = {"": words_for(request).gettext("Reload and retry.")}
        return await second_step_answer(request, session, user, form, 403, errors=refused)
    return await _signed_in_with_passkey(
        request, session, runtime, client, form, user, pending.method
    )


async def _pending_or_none(
    request: Request, session: AsyncSession, runtime: Runtime
) -> tuple[User, str] | None:
    """For the script's options call: the pending account, or None (a JSON 403, not the
    sign-in page the form routes answer with)."""
    try:
        user, pending = await pending_account(request, session, runtime)
    except Answer:
        return None
    return user, pending.method
