"""Request and response shapes of the account endpoints (field names as in the seed)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, Field, create_model

from upwatch.kit.inputs import Input, JsonObject, TimeZone, worded
from upwatch.kit.languages import Language
from upwatch.kit.schemas import Email, Password, Role, RowOut
from upwatch.notifications import personal
from upwatch.notifications.channels import REGISTRY

Theme = Literal["light", "dark"]
if TYPE_CHECKING:
    Channel = str
else:
    # The channel that goes first: one of those the user settings show.
    Channel = Literal[personal.SETTINGS_CHANNELS]


def unique_roles(value: list[str]) -> list[str]:
    return list(dict.fromkeys(value))


Name = Annotated[str, Field(max_length=100)]
# Empty, or an http(s) address: the image is shown by clients, so no javascript: URLs.
ImageUrl = Annotated[
    str,
    Field(
        max_length=2048,
        pattern=worded(
            r"^(https?://[^\u0000-\u0020\u007f-\u009f]+)?$",
            "empty, or an http:// or https:// address without spaces or control characters",
        ),
    ),
]
Roles = Annotated[list[Role], Field(min_length=1, max_length=4), AfterValidator(unique_roles)]


def _config_shape(channel: str) -> str:
    """``<name>Config `{field, optional?}``` as the description below lists it."""
    model = REGISTRY[channel].config_model
    names = [
        f"{field.alias or name}{'' if field.is_required() else '?'}"
        for name, field in model.model_fields.items()
    ]
    return f"{personal.config_key(channel)} `{{{', '.join(names)}}}`"


ConfigObject = Annotated[
    JsonObject,
    Field(
        description="A personal channel's config, with the fields of a notification provider "
        f"of that type: {', '.join(_config_shape(c) for c in personal.CHANNELS)}. An e-mail "
        'config without addresses (`{"to": []}`) means your own address. `{}` unsets it. '
        "Checked like a provider's config (422 naming the field); one sent back as read "
        "(masked secrets included) is kept as it is."
    ),
]

Model = TypeVar("Model", bound=BaseModel)


def with_channels(name: str, base: type[Model], doc: str, **fields: Any) -> type[Model]:
    """``base`` and ``fields``, a model whose channel fields come from the registry. Type
    checkers see ``base`` (the names below are aliases of it for them)."""
    return create_model(name, __base__=base, __module__=__name__, __doc__=doc, **fields)


def _switches(channels: tuple[str, ...], *, optional: bool) -> dict[str, Any]:
    return dict.fromkeys(channels, (bool | None, None) if optional else (bool, ...))


def _configs(channels: tuple[str, ...], field: Any) -> dict[str, Any]:
    return {personal.config_key(c): field for c in channels}


InvitationToken = Annotated[
    str | None,
    Field(max_length=256, description="from a project invitation e-mail: joins that project"),
]


class SignupRequest(Input):
    email: Email
    password: Password
    firstName: Name = ""
    lastName: Name = ""
    invitationToken: InvitationToken = None


# A TOTP code (six digits) or a recovery code, spaces and hyphens allowed.
OneTimeCode = Annotated[
    str,
    Field(
        max_length=64,
        description="the six-digit code of your authenticator app, or one of your unused "
        "recovery codes (once each)",
    ),
]


class LoginRequest(Input):
    email: Annotated[str, Field(max_length=320)]
    password: Annotated[str, Field(max_length=1024)]
    otp: OneTimeCode | None = Field(
        default=None,
        description="With two-factor sign-in on: the six-digit code of your authenticator "
        "app, or an unused recovery code. Left out, such an account gets 401 `mfa-required`.",
    )


class RefreshRequest(Input):
    refresh_token: Annotated[str, Field(max_length=256)]


class ForgotPasswordRequest(Input):
    email: Annotated[str, Field(max_length=320)]


class ResetPasswordRequest(Input):
    token: Annotated[str, Field(max_length=256)]
    newPassword: Password


class CreateUserRequest(Input):
    email: Email
    password: Password | None = None
    firstName: Name = ""
    lastName: Name = ""
    provider: Annotated[str, Field(max_length=50)] | None = None
    providerId: Annotated[str, Field(max_length=255)] | None = None
    image: ImageUrl = ""
    isEmailVerified: bool = False
    roles: Roles = Field(default_factory=lambda: list[Role](["user"]))
    invitationToken: InvitationToken = None


# The settings record's channel fields (switches, `*Config`) come from the channel registry.
UNCHANGED = "Fields left out or null stay as they are."
NotificationSwitchesIn = with_channels(
    "NotificationSwitchesIn",
    Input,
    "Switches left out or null stay as they are.",
    **_switches(personal.CHANNELS, optional=True),
)


def _settings_in(name: str, base: type[Model], channels: tuple[str, ...]) -> type[Model]:
    """A settings request showing ``channels``: every field optional."""
    return with_channels(
        name,
        base,
        UNCHANGED,
        notifications=(NotificationSwitchesIn | None, None),
        preferredNotification=(Channel | None, None),
        **_configs(channels, (ConfigObject | None, None)),
    )


class _ProfileSettingsIn(Input):
    theme: Theme | None = None


class _UserSettingsFields(Input):
    language: Language | None = None
    timezone: TimeZone | None = None
    theme: Theme | None = None


if TYPE_CHECKING:
    ProfileSettingsIn = _ProfileSettingsIn
    UserSettingsFields = _UserSettingsFields
else:
    ProfileSettingsIn = _settings_in(
        "ProfileSettingsIn", _ProfileSettingsIn, personal.PROFILE_CHANNELS
    )
    UserSettingsFields = _settings_in(
        "UserSettingsFields", _UserSettingsFields, personal.SETTINGS_CHANNELS
    )


# ---- responses ----


class UserOut(RowOut):
    id: str
    email: str
    roles: list[Role]
    first_name: str
    last_name: str
    image: str


class CreatedUserOut(UserOut):
    is_email_verified: bool
    is_password_user: bool


class AuthResponse(BaseModel):
    access_token: str
    refresh_token: str
    token_type: Literal["bearer"] = "bearer"  # noqa: S105  (a scheme name)
    user: UserOut


class TokenPair(BaseModel):
    access_token: str
    refresh_token: str
    token_type: Literal["bearer"] = "bearer"  # noqa: S105  (a scheme name)


class ChannelStatusOut(BaseModel):
    active: bool = Field(
        description="Incident alerts of your projects reach you on this channel "
        "(if the project owner's plan offers it)"
    )
    reason: str | None = Field(
        description="Why not, when inactive: the switch is off, the config is not set, or "
        "what in the config is invalid (e.g. `slackConfig.webhookUrl: Field required`)"
    )


ChannelStatus = Annotated[
    dict[str, ChannelStatusOut],
    Field(
        description="Your personal channels, one entry per channel of this view: a channel is "
        "active when its `notifications` switch is on and its `*Config` is set and valid. A "
        "stored config that does not validate is kept but inactive."
    ),
]
SHOWN_CONFIG = "Secrets masked as in notification providers; `{}` when not set"


_CONFIG_OUT: Any = (dict[str, Any], Field(description=SHOWN_CONFIG))


def _settings_out(
    name: str, base: type[Model], switches: str, channels: tuple[str, ...]
) -> type[Model]:
    """A view of the settings record showing ``channels`` (their switches: ``switches``)."""
    notifications = with_channels(
        switches,
        BaseModel,
        "",
        **_switches(channels, optional=False),
    )
    return with_channels(
        name,
        base,
        "",
        notifications=(notifications, ...),
        preferredNotification=(Channel, ...),
        **_configs(channels, _CONFIG_OUT),
        channelStatus=(ChannelStatus, ...),
    )


class _ProfileSettingsOut(BaseModel):
    theme: Theme


if TYPE_CHECKING:
    ProfileSettingsOut = _ProfileSettingsOut
else:
    ProfileSettingsOut = _settings_out(
        "ProfileSettingsOut", _ProfileSettingsOut, "ProfileNotifications", personal.PROFILE_CHANNELS
    )


class ProfileOut(RowOut):
    id: str
    email: str
    roles: list[Role]
    is_email_verified: bool
    first_name: str
    last_name: str
    image: str
    settings: ProfileSettingsOut
    is_password_user: bool

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        """Stored settings completed with defaults (``context``: that view)."""
        return {"settings": context["settings"]}


class _UserSettingsOut(BaseModel):
    language: Language
    timezone: str
    theme: Theme


if TYPE_CHECKING:
    UserSettingsOut = _UserSettingsOut
else:
    UserSettingsOut = _settings_out(
        "UserSettingsOut", _UserSettingsOut, "SettingsNotifications", personal.SETTINGS_CHANNELS
    )


# ---- updates, after the responses they change ----


class UpdateProfileRequest(Input):
    """Fields left out or null stay as they are (`settings` merges like `PUT /users/settings`)."""

    resource = ProfileOut

    email: Email | None = None
    password: Password | None = None
    firstName: Name | None = None
    lastName: Name | None = None
    image: ImageUrl | None = None
    provider: Annotated[str, Field(max_length=50)] | None = None
    providerId: Annotated[str, Field(max_length=255)] | None = None
    isEmailVerified: bool | None = None
    roles: Roles | None = None
    settings: ProfileSettingsIn | None = None


class UpdateSettingsRequest(UserSettingsFields):
    """The settings fields, given directly or wrapped as ``{"settings": {...}}``."""

    resource = UserSettingsOut

    settings: UserSettingsFields | None = None

    def fields(self) -> dict[str, Any]:
        own = self.model_dump(exclude_unset=True, exclude={"settings"})
        wrapped = self.settings.model_dump(exclude_unset=True) if self.settings else {}
        return {**own, **wrapped}


class PasskeyOut(RowOut):
    """A passkey registered to the account; its key and credential id stay on the server."""

    id: str
    name: str
    created_at: datetime
    last_used_at: datetime | None = Field(description="The last sign-in with it; null: never")
    transports: list[str] = Field(
        description="How the browser reached the authenticator when it was made, as it said "
        "(`internal`, `usb`, `nfc`, `ble`, `hybrid`...)"
    )


# ---- two-factor sign-in ----


class OneTimeCodeRequest(Input):
    code: OneTimeCode


class TotpEnrolmentOut(BaseModel):
    secret: str = Field(
        description="The shared secret (base32), shown this once: type it into an "
        "authenticator app, or let it read `otpauthUri` as a QR code"
    )
    otpauthUri: str = Field(description="`otpauth://totp/...` with issuer Upwatch")


class RecoveryCodesOut(BaseModel):
    recoveryCodes: list[str] = Field(
        description="Ten single-use codes that stand in for an authenticator code, shown this "
        "once (only their digests are kept)"
    )


class TwoFactorOut(BaseModel):
    totpEnabled: bool
    totpEnabledAt: datetime | None
    totpPending: bool = Field(
        description="An enrolment was started and not confirmed yet (POST /users/me/mfa/totp)"
    )
    recoveryCodesLeft: int
    passkeyCount: int
    hasSecondFactor: bool = Field(description="TOTP on, or at least one passkey registered")
