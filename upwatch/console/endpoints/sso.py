"""Signing in through the OpenID provider (docs/single-sign-on.md): the authorization code
flow with PKCE, its state and nonce kept in a sealed cookie (``sso/flow.py``).

Every refusal is the sign-in page again, with what went wrong in words of its own and a 4xx
status (502 when the provider itself failed), and a ``sign_in.failed`` event; the code, the
tokens and the client secret never show in a page or the log."""

from __future__ import annotations

import hmac
from typing import Any, Final

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from upwatch.accounts.factors import (
    has_second_factor,
)
from upwatch.audit import kinds
from upwatch.audit.service import record
from upwatch.config import Settings
from upwatch.console.endpoints.page import Visitor, after_sign_in, redirect, secure, words_for
from upwatch.console.endpoints.signin import (
    SIGN_IN,
    _sign_in_page,
    _start_session,
    to_second_step,
)
from upwatch.dependencies import ClientAddress, RuntimeDep, Session
from upwatch.kit.languages import N_
from upwatch.sso.flow import FLOW_COOKIE, FLOW_SECONDS, Flow, Flows
from upwatch.sso.provider import OpenIdProvider, SignInRefused, http_client
from upwatch.sso.service import SsoService

router = APIRouter(prefix="/app")
# The sign-in's second step (TOTP, recovery code, passkey), which reads the pending sign-in.
SECOND_STEP: Final = "/app/login/second-factor"


class NotConfigured(SignInRefused):
    status = 404


class TooManyAttempts(SignInRefused):
    status = 429


def _refused(request: Request, exc: SignInRefused, wanted: str = "") -> Response:
    """The sign-in page with what went wrong: a refusal's message is marked with ``N_``
    where it is raised, and translated here."""
    said = words_for(request).gettext(str(exc))
    response = _sign_in_page(request, SIGN_IN, exc.status, form={"next": wanted}, errors={"": said})
    response.delete_cookie(FLOW_COOKIE, path="/app")
    return response


def _not_configured() -> NotConfigured:
    return NotConfigured(N_("This service has no single sign-on."), "not_configured")


@router.get("/sso")
async def start(request: Request, runtime: RuntimeDep, visitor: Visitor) -> Response:
    """Leave for the provider's sign-in, with this flow's cookie set."""
    settings = runtime.settings
    wanted = request.query_params.get("next", "")[:2000]
    if visitor:
        return redirect(request, after_sign_in(wanted))
    if not settings.sso_configured:
        return _refused(request, _not_configured())
    flow = Flow.begin(wanted)
    try:
        async with http_client() as client:
            url = await OpenIdProvider(settings).authorization_url(
                client, flow.state, flow.nonce, flow.verifier
            )
    except SignInRefused as exc:
        return _refused(request, exc, wanted)
    response = RedirectResponse(url, status_code=303)
    response.set_cookie(
        FLOW_COOKIE,
        Flows(settings.signing_key).seal(flow, runtime.clock.now()),
        max_age=FLOW_SECONDS,
        path="/app",
        httponly=True,
        samesite="lax",
        secure=secure(request),
    )
    return response


@router.get("/sso/callback")
async def callback(
    request: Request, session: Session, runtime: RuntimeDep, client: ClientAddress
) -> Response:
    """Back from the provider: check the flow, redeem the code, sign the account in."""
    settings = runtime.settings
    now = runtime.clock.now()
    # The password sign-in's throttle per address: a flood of made-up callbacks neither
    # fills the audit log with failures nor reaches the provider's token endpoint.
    if await runtime.throttles.login_address.take(client) is not None:
        refusal = TooManyAttempts(N_("Too many sign-in attempts; try again later."), "throttled")
        return _refused(request, refusal)
    flow = Flows(settings.signing_key).open(request.cookies.get(FLOW_COOKIE), now)
    wanted = flow.next if flow else ""
    try:
        if not settings.sso_configured:
            raise _not_configured()
        claims = await _redeemed(request, settings, flow, int(now.timestamp()))
        user = await SsoService(session, runtime).sign_in(claims)
    except SignInRefused as exc:
        # Nothing was changed before a refusal: committing keeps the event alone.
        await record(
            session,
            kinds.SIGN_IN_FAILED,
            now,
            actor=None,
            target_type="account",
            via="oidc",
            details={"method": "oidc", "reason": exc.reason},
        )
        return _refused(request, exc, wanted)
    await runtime.throttles.login_address.release(client)
    if await has_second_factor(session, user):
        # The second step records the sign-in, naming the provider as its first factor.
        response = to_second_step(request, runtime, user, "oidc", {"next": wanted})
    else:
        await record(
            session,
            kinds.SIGN_IN_SUCCEEDED,
            now,
            actor=user,
            target_type="account",
            target_id=user.id,
            target_label=user.email,
            via="oidc",
            details={"method": "oidc"},
        )
        signed_in = words_for(request, user).gettext("Signed in.")
        response = await _start_session(request, session, runtime, user, signed_in, wanted)
    response.delete_cookie(FLOW_COOKIE, path="/app")
    return response


async def _redeemed(
    request: Request, settings: Settings, flow: Flow | None, now: int
) -> dict[str, Any]:
    """The provider's answer for this callback, asked once: when the request guard runs the
    request again after a database conflict, the same answer is used, since the provider
    redeems a code only once."""
    kept: dict[str, Any] | SignInRefused | None = getattr(request.state, "sso_outcome", None)
    if kept is None:
        try:
            kept = await _claims(request, settings, flow, now)
        except SignInRefused as exc:
            kept = exc
        request.state.sso_outcome = kept
    if isinstance(kept, SignInRefused):
        raise kept
    return kept


async def _claims(
    request: Request, settings: Settings, flow: Flow | None, now: int
) -> dict[str, Any]:
    params = request.query_params
    if flow is None:
        raise SignInRefused(
            N_("This sign-in expired or began in another browser; start again."), "no_flow"
        )
    state = params.get("state", "")
    if not hmac.compare_digest(state.encode(), flow.state.encode()):
        raise SignInRefused(
            N_("This sign-in is not the one this browser began; start again."), "state"
        )
    error = params.get("error")
    if error is not None:
        denied = error == "access_denied"
        raise SignInRefused(
            N_("The sign-in was cancelled at the provider.")
            if denied
            else N_("The sign-in provider refused the sign-in."),
            "access_denied" if denied else "provider_refused",
        )
    code = params.get("code", "")
    if not code or len(code) > 4096:
        raise SignInRefused(N_("The sign-in provider sent no code; start again."), "no_code")
    async with http_client() as client:
        provider = OpenIdProvider(settings)
        return await provider.claims(
            client, code, flow.verifier, flow.nonce, now, params.get("iss")
        )
