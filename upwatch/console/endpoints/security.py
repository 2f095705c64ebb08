"""The visitor's sign-in security (/app/settings/security): two-factor sign-in with an
authenticator app and its recovery codes. Passkeys and sessions add their own sections to
this page (security.html) and their routes to this router.

A TOTP secret and recovery codes are shown on the page that answers the form that made them,
once, never on a page that can be loaded again."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from markupsafe import Markup

from upwatch.accounts.twofactor import TwoFactorService
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_

router = APIRouter(prefix="/app")
PATH = "/app/settings/security"


def qr_svg(text: str, label: str) -> Markup:
    """``text`` as a QR code, an inline SVG (dark on white whatever the theme, so every
    camera reads it)."""
    import segno  # 5 MB, for the page that sets up two-factor sign-in only

    svg = segno.make(text, error="m").svg_inline(
        scale=4, border=4, dark="#000", light="#fff", svgclass="qr"
    )
    # segno writes the markup itself (no text of ours but ``label``, escaped here).
    return Markup(svg.replace("<svg ", '<svg role="img" aria-label="{}" ', 1)).format(label)  # noqa: S704


async def _security_page(page: Page, status: int = 200, **context: Any) -> Response:
    state = await TwoFactorService(page.session, page.runtime).state(page.user)
    return page.html(
        "security.html",
        status,
        title=page.gettext("Sign-in security"),
        section="settings",
        state=state,
        **context,
    )


@router.get("/settings/security", openapi_extra=offers("getTwoFactor"))
async def security_page(page: SignedInPage) -> Response:
    return await _security_page(page)


@router.post("/settings/security/totp", openapi_extra=offers("startTotp"))
async def start_totp(page: SignedInPage) -> Response:
    await page.form()
    try:
        secret, uri = await TwoFactorService(page.session, page.runtime).start_totp(page.user)
    except ProblemError as exc:
        status, errors = page.refused(exc, N_("account"))
        return await _security_page(page, status, errors=errors)
    return page.html(
        "security_totp.html",
        title=page.gettext("Set up an authenticator app"),
        section="settings",
        secret=secret,
        grouped=" ".join(secret[i : i + 4] for i in range(0, len(secret), 4)),
        qr=qr_svg(uri, page.gettext("QR code of the authenticator app setup")),
    )


async def _with_code(page: Page, action: str) -> Response:
    form = await page.form()
    service = TwoFactorService(page.session, page.runtime)
    code = form.get("code", "")[:64]
    try:
        if action == "confirm":
            codes = await service.confirm_totp(page.user, code)
        elif action == "renew":
            codes = await service.renew_recovery_codes(page.user, code)
        else:
            await service.turn_off_totp(page.user, code)
            return page.redirect(PATH, page.gettext("Two-factor sign-in is off."))
    except ProblemError as exc:
        status, errors = page.refused(exc, N_("account"))
        shown = {action: errors.get("code") or errors.get("", "")}
        return await _security_page(page, status, errors=shown)
    return page.html(
        "security_codes.html",
        title=page.gettext("Your recovery codes"),
        section="settings",
        codes=codes,
        turned_on=action == "confirm",
    )


@router.post("/settings/security/totp/confirm", openapi_extra=offers("confirmTotp"))
async def confirm_totp(page: SignedInPage) -> Response:
    return await _with_code(page, "confirm")


@router.post("/settings/security/totp/disable", openapi_extra=offers("disableTotp"))
async def disable_totp(page: SignedInPage) -> Response:
    return await _with_code(page, "disable")


@router.post("/settings/security/recovery-codes", openapi_extra=offers("renewRecoveryCodes"))
async def renew_recovery_codes(page: SignedInPage) -> Response:
    return await _with_code(page, "renew")
