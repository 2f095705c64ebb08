"""HTTP routes of accounts: /auth/* and /users/*."""

from __future__ import annotations

from fastapi import BackgroundTasks, status
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.accounts import preferences
from upwatch.accounts.passkeys import PasskeyService
from upwatch.accounts.schemas import (
    AuthResponse,
    CreatedUserOut,
    CreateUserRequest,
    ForgotPasswordRequest,
    LoginRequest,
    OneTimeCodeRequest,
    PasskeyOut,
    ProfileOut,
    RecoveryCodesOut,
    RefreshRequest,
    ResetPasswordRequest,
    SignupRequest,
    TokenPair,
    TotpEnrolmentOut,
    TwoFactorOut,
    UpdateProfileRequest,
    UpdateSettingsRequest,
    UserOut,
    UserSettingsOut,
)
from upwatch.accounts.service import AccountService, accept_reset_request, send_reset_link
from upwatch.accounts.twofactor import TwoFactorService
from upwatch.callers.dependencies import OptionalPerson, PersonUser
from upwatch.dependencies import ClientAddress, RuntimeDep, Session
from upwatch.kit.errors import NotFound, ValidationFailed, problem_responses
from upwatch.kit.routes import Routes
from upwatch.kit.schemas import DeletedOut, MessageOut
from upwatch.models import User
from upwatch.projects.service import accept_invitation
from upwatch.runtime import Runtime

auth = Routes("/auth", "auth", (400, 422, 500))
users = Routes("/users", "users", (400, 422, 429, 500))


def user_out(user: User) -> UserOut:
    return UserOut.model_validate(user)


def profile_out(user: User) -> ProfileOut:
    settings = preferences.profile_view(user.settings, user.email)
    return ProfileOut.model_validate(user, context={"settings": settings})


async def _join_invited_project(
    session: AsyncSession, runtime: Runtime, user: User, token: str | None
) -> None:
    if token is None:
        return
    try:
        await accept_invitation(session, runtime, user, token)
    except NotFound as exc:
        # The whole request fails (and the account is not created): a wrong link should say so.
        raise ValidationFailed.on(
            "invitationToken", "no pending invitation for this address has this token"
        ) from exc


@auth.creates("signup", 403, 409, path="/signup")
async def signup(body: SignupRequest, session: Session, runtime: RuntimeDep) -> AuthResponse:
    """Register with e-mail and password; answers with tokens and the new user. An
    `invitationToken` that no pending invitation has is a 422 and creates no account.
    Where the operator limits sign-up (`UPWATCH_SIGNUP`), a 403 `signup-closed`: `invite`
    takes only a request with an `invitationToken`, `closed` none at all."""
    service = AccountService(session, runtime)
    user = await service.signup(body)
    await _join_invited_project(session, runtime, user, body.invitationToken)
    access, refresh = await service.issue_tokens(user)
    return AuthResponse(access_token=access, refresh_token=refresh, user=user_out(user))


@auth.post("/login", operation_id="login", responses=problem_responses(401, 429))
async def login(
    body: LoginRequest, session: Session, runtime: RuntimeDep, client: ClientAddress
) -> AuthResponse:
    """Log in; the same 401 for an unknown e-mail and a wrong password. Throttled (429).

    With two-factor sign-in on, `otp` carries the code of the authenticator app or an unused
    recovery code: without it the answer is a 401 whose `type` ends in `mfa-required`
    (also for an account whose only second factor is a passkey: it signs in on the web
    console); a wrong, expired or already used code is a 401 and counts toward the
    throttle like a wrong password."""
    service = AccountService(session, runtime)
    user = await service.login(body.email, body.password, client, body.otp)
    access, refresh = await service.issue_tokens(user)
    return AuthResponse(access_token=access, refresh_token=refresh, user=user_out(user))


@auth.post("/refresh", operation_id="refreshToken", responses=problem_responses(401))
async def refresh(body: RefreshRequest, session: Session, runtime: RuntimeDep) -> TokenPair:
    """Trade a refresh token for a new pair. Each refresh token works once; a replayed one
    revokes every token descended from the same login."""
    access, new_refresh = await AccountService(session, runtime).refresh(body.refresh_token)
    return TokenPair(access_token=access, refresh_token=new_refresh)


@auth.post("/logout", operation_id="logout")
async def logout(body: RefreshRequest, session: Session, runtime: RuntimeDep) -> MessageOut:
    """End the session the refresh token belongs to."""
    await AccountService(session, runtime).logout(body.refresh_token)
    return MessageOut(message="Logged out")


@auth.post("/forgot-password", operation_id="forgotPassword")
async def forgot_password(
    body: ForgotPasswordRequest,
    runtime: RuntimeDep,
    client: ClientAddress,
    background: BackgroundTasks,
) -> MessageOut:
    """E-mail a reset link if the account exists; the answer is the same either way, and the
    work happens after the response so its timing says nothing either."""
    if await accept_reset_request(runtime, body.email, client):
        background.add_task(send_reset_link, runtime, body.email)
    return MessageOut(message="If an account exists for this address, a reset link was sent")


@auth.post("/reset-password", operation_id="resetPassword")
async def reset_password(
    body: ResetPasswordRequest, session: Session, runtime: RuntimeDep
) -> MessageOut:
    """Set a new password with a reset token (valid one hour, once): an unknown, expired or
    used token is a 400 (contract §4). Every existing token of the account stops working."""
    await AccountService(session, runtime).reset_password(body.token, body.newPassword)
    return MessageOut(message="Password has been reset")


@users.post(
    "",
    status_code=status.HTTP_201_CREATED,
    operation_id="createUser",
    responses=problem_responses(401, 403, 409),
    # The bearer token is optional here: anyone may create a plain account.
    openapi_extra={"security": [{}, {"bearer": []}]},
)
async def create_user(
    body: CreateUserRequest, session: Session, runtime: RuntimeDep, caller: OptionalPerson
) -> CreatedUserOut:
    """Create an account; without a password it is an OAuth-style account that cannot log
    in with one. Roles other than `user` and `isEmailVerified` need an admin token. An
    `invitationToken` that no pending invitation has is a 422 and creates no account.
    Without an admin token it is a sign-up, limited like `POST /auth/signup`
    (`UPWATCH_SIGNUP`: 403 `signup-closed`). An API key is refused (403), as on every
    `/users` route."""
    user = await AccountService(session, runtime).create_user(body, caller)
    await _join_invited_project(session, runtime, user, body.invitationToken)
    return CreatedUserOut.model_validate(user)


@users.get("/me", operation_id="getProfile", responses=problem_responses(401))
async def get_profile(user: PersonUser) -> ProfileOut:
    """The caller's profile."""
    return profile_out(user)


@users.put("/me", operation_id="updateProfile", responses=problem_responses(401, 403, 409))
async def update_profile(
    body: UpdateProfileRequest, user: PersonUser, session: Session, runtime: RuntimeDep
) -> ProfileOut:
    """Update the caller. Changing roles or verifying an address needs an admin; a new e-mail
    is unverified; a new password revokes every token of the account, this one included.
    `settings` merges like `PUT /users/settings`, its `*Config` objects checked the same way
    (422 naming e.g. `settings.slackConfig.webhookUrl`)."""
    user = await AccountService(session, runtime).update_profile(user, body)
    return profile_out(user)


@users.deletes("deleteAccount", 401, path="/me")
async def delete_account(user: PersonUser, session: Session, runtime: RuntimeDep) -> DeletedOut:
    """Delete the caller's account and everything it owns; its tokens stop working at once."""
    user_id = user.id
    await AccountService(session, runtime).delete_account(user)
    return DeletedOut(id=user_id)


@users.put("/settings", operation_id="updateSettings", responses=problem_responses(401))
async def update_settings(
    body: UpdateSettingsRequest, user: PersonUser, session: Session, runtime: RuntimeDep
) -> UserSettingsOut:
    """Merge the given settings into the caller's settings record. The fields may be sent
    directly or wrapped as `{"settings": {...}}`; fields left out or null stay as they are.
    `timezone` must be an IANA time zone name (422, contract §5).

    The `notifications` switches and `*Config` objects are your personal channels: each
    active one (switch on, config set and valid) gets the incident alerts of every project
    you belong to, `preferredNotification` first. A new `*Config` is checked like a
    notification provider's config of that type, its URLs against the address policy (422
    naming the field, e.g. `slackConfig.webhookUrl`); `channelStatus` says which channels
    are active and why not."""
    user = await AccountService(session, runtime).update_settings(user, body.fields())
    return preferences.settings_view(user.settings, user.email)


@users.get("/settings", operation_id="getSettings", responses=problem_responses(401))
async def get_settings(user: PersonUser) -> UserSettingsOut:
    """The caller's settings; `channelStatus` says which personal channels are active."""
    return preferences.settings_view(user.settings, user.email)


@users.get("/me/passkeys", operation_id="listPasskeys", responses=problem_responses(401, 403))
async def list_passkeys(
    user: PersonUser, session: Session, runtime: RuntimeDep
) -> list[PasskeyOut]:
    """The caller's passkeys, newest first: name, when made and last used, transports;
    never the public key or the credential id. Passkeys are registered in the console
    (`/app/settings/passkeys`: the browser's WebAuthn ceremony), not through this API. An
    API key is refused (403)."""
    passkeys = await PasskeyService(session, runtime).listed(user)
    return [PasskeyOut.model_validate(p) for p in passkeys]


@users.deletes("deletePasskey", 401, 403, 404, path="/me/passkeys/{id}")
async def delete_passkey(
    id: str, user: PersonUser, session: Session, runtime: RuntimeDep
) -> DeletedOut:
    """Remove one of the caller's passkeys: it no longer signs in, as the first factor or
    the second. Another person's passkey, or an unknown id, is a 404. An API key is refused
    (403)."""
    await PasskeyService(session, runtime).remove(user, id)
    return DeletedOut(id=id)


# ---- two-factor sign-in (docs/two-factor.md) ----


@users.get("/me/mfa", operation_id="getTwoFactor", responses=problem_responses(401, 403))
async def get_two_factor(user: PersonUser, session: Session, runtime: RuntimeDep) -> TwoFactorOut:
    """The caller's second factors: TOTP on or pending, recovery codes left, passkeys."""
    state = await TwoFactorService(session, runtime).state(user)
    return TwoFactorOut(
        totpEnabled=state.totp_enabled_at is not None,
        totpEnabledAt=state.totp_enabled_at,
        totpPending=state.totp_pending,
        recoveryCodesLeft=state.recovery_codes_left,
        passkeyCount=state.passkey_count,
        hasSecondFactor=state.has_second_factor,
    )


@users.creates("startTotp", 401, 403, 409, path="/me/mfa/totp")
async def start_totp(user: PersonUser, session: Session, runtime: RuntimeDep) -> TotpEnrolmentOut:
    """Start TOTP enrolment: a new secret, shown this once, with its `otpauth://` address
    for an authenticator app. Nothing changes at sign-in until it is confirmed; starting
    again replaces an unconfirmed secret. 409 when TOTP is on already."""
    secret, uri = await TwoFactorService(session, runtime).start_totp(user)
    return TotpEnrolmentOut(secret=secret, otpauthUri=uri)


@users.post(
    "/me/mfa/totp/confirm", operation_id="confirmTotp", responses=problem_responses(401, 403, 409)
)
async def confirm_totp(
    body: OneTimeCodeRequest, user: PersonUser, session: Session, runtime: RuntimeDep
) -> RecoveryCodesOut:
    """Turn TOTP on with a code of the enrolled secret; answers with ten single-use
    recovery codes, shown this once. A wrong code: 422 (it counts toward the login
    throttle: 429); no enrolment started, or TOTP on already: 409."""
    codes = await TwoFactorService(session, runtime).confirm_totp(user, body.code)
    return RecoveryCodesOut(recoveryCodes=codes)


@users.deletes("disableTotp", 401, 403, 409, path="/me/mfa/totp")
async def disable_totp(
    body: OneTimeCodeRequest, user: PersonUser, session: Session, runtime: RuntimeDep
) -> DeletedOut:
    """Turn TOTP off with a code of the authenticator app or a recovery code; the recovery
    codes go too. Answers with the account's id. A wrong code: 422 (counted by the login
    throttle: 429); TOTP not on: 409."""
    await TwoFactorService(session, runtime).turn_off_totp(user, body.code)
    return DeletedOut(id=user.id)


@users.post(
    "/me/mfa/recovery-codes",
    operation_id="renewRecoveryCodes",
    responses=problem_responses(401, 403, 409),
)
async def renew_recovery_codes(
    body: OneTimeCodeRequest, user: PersonUser, session: Session, runtime: RuntimeDep
) -> RecoveryCodesOut:
    """Replace the recovery codes with ten new ones (shown this once), with a code of the
    authenticator app or a recovery code. A wrong code: 422 (counted by the login throttle:
    429); TOTP not on: 409."""
    codes = await TwoFactorService(session, runtime).renew_recovery_codes(user, body.code)
    return RecoveryCodesOut(recoveryCodes=codes)
