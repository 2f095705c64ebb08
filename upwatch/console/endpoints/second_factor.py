"""The sign-in's second step: the home of every second factor (docs/two-factor.md).

A right password (or another first factor) for an account with a second factor leaves a
*pending sign-in* in a short-lived cookie (accounts/factors.py) and leads here; the code of an
authenticator app or a recovery code turns it into a session. Passkeys add their own way in
(``POST /app/login/second-factor/passkey``) on this same page, reading the same cookie with
``pending_account``.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.accounts.factors import (
    PENDING_COOKIE,
    PendingSignIn,
    PendingSignIns,
    has_second_factor,
)
from upwatch.accounts.repository import SecondFactorRepository, UserRepository
from upwatch.accounts.service import AccountService
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Answer, errors_of, redirect, status_of, words_for
from upwatch.console.endpoints.signin import (
    CARRIED,
    _join,
    _sign_in_form,
    _sign_in_page,
    _start_session,
)
from upwatch.dependencies import ClientAddress, RuntimeDep, Session
from upwatch.kit.db import discard_changes
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_
from upwatch.models import User
from upwatch.runtime import Runtime

SECOND_STEP: Final = ("login_second_factor.html", N_("Two-factor sign-in"))

router = APIRouter(prefix="/app")


async def pending_account(
    request: Request, session: AsyncSession, runtime: Runtime
) -> tuple[User, PendingSignIn]:
    """The account the pending sign-in cookie names, unchanged since (its token version);
    otherwise the answer is the sign-in page again."""
    pending = PendingSignIns(runtime.settings.signing_key).read(
        request.cookies.get(PENDING_COOKIE), runtime.clock.now()
    )
    user = await UserRepository(session).get(pending.user_id) if pending else None
    # A second factor removed meanwhile (from another session) leaves nothing to ask for.
    if (
        pending is None
        or user is None
        or user.token_version != pending.token_version
        or not await has_second_factor(session, user)
    ):
        expired = words_for(request).gettext("Sign in again: that sign-in has expired.")
        response = redirect(request, "/app/login", expired)
        response.delete_cookie(PENDING_COOKIE, path="/app")
        raise Answer(response)
    return user, pending


async def finish_sign_in(
    request: Request,
    session: AsyncSession,
    runtime: Runtime,
    user: User,
    form: dict[str, str],
) -> Response:
    """Every factor was given: the session starts (where ``next`` asked to go), the pending
    sign-in ends, and an invitation the sign-in form carried is accepted."""
    joined = await _join(request, session, runtime, user, form.get("invitation"))
    wanted = form.get("next")
    flash = joined or words_for(request, user).gettext("Signed in.")
    response = await _start_session(request, session, runtime, user, flash, wanted)
    response.delete_cookie(PENDING_COOKIE, path="/app")
    return response


async def second_step_answer(
    request: Request,
    session: AsyncSession,
    user: User,
    form: dict[str, str],
    status: int = 200,
    **context: Any,
) -> Response:
    """The second step's page for ``user`` (the parts of the factors it has: an account
    without a passkey is not offered one), e.g. again with ``errors``."""
    recovery = request.query_params.get("with") == "recovery-code" or form.get("with") == (
        "recovery-code"
    )
    carried = {name: form[name] for name in CARRIED if form.get(name)}
    return _sign_in_page(
        request,
        SECOND_STEP,
        status,
        form=form,
        totp_on=user.totp_enabled_at is not None,
        passkeys_on=await SecondFactorRepository(session).passkey_count(user.id) > 0,
        recovery=recovery,
        switch_query=urlencode({**carried, **({} if recovery else {"with": "recovery-code"})}),
        **context,
    )


@router.get("/login/second-factor")
async def second_step_page(request: Request, session: Session, runtime: RuntimeDep) -> Response:
    user, _ = await pending_account(request, session, runtime)
    form = {name: request.query_params.get(name, "") for name in CARRIED}
    return await second_step_answer(request, session, user, form)


@router.post("/login/second-factor", openapi_extra=offers("login"))
async def second_step(
    request: Request, session: Session, runtime: RuntimeDep, client: ClientAddress
) -> Response:
    form = await _sign_in_form(request, SECOND_STEP)
    user, pending = await pending_account(request, session, runtime)
    accounts = AccountService(session, runtime)
    try:
        factor = await accounts.second_factor(user, form.get("code", "")[:64], client)
        await accounts.signed_in(user, client, factor, via=pending.method)
        return await finish_sign_in(request, session, runtime, user, form)
    except ProblemError as exc:
        # A failed attempt's audit event stays (keep_changes); nothing else does.
        if not exc.keep_changes:
            discard_changes(session)
        shown = {k: v for k, v in form.items() if k != "code"}
        errors = {"code": errors_of(exc).get("", exc.title)}
        return await second_step_answer(
            request, session, user, shown, status_of(exc), errors=errors
        )
