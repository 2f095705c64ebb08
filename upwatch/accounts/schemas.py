"""Request and response shapes of the account endpoints (field names as in the seed)."""

from __future__ import annotations

import zoneinfo
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

from upwatch.kit.inputs import Input, JsonObject, worded
from upwatch.kit.schemas import Email, Password, Role, RowOut

Language = Literal["en", "es", "fr", "de", "it", "pt", "ru", "zh", "ja", "ko"]
Theme = Literal["light", "dark"]
Channel = Literal["email", "slack", "discord", "teams", "webhook"]


@lru_cache(maxsize=1)
def _zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def check_timezone(value: str) -> str:
    if value not in _zones():
        raise ValueError("not an IANA time zone name")
    return value


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
TimeZone = Annotated[str, Field(max_length=64), AfterValidator(check_timezone)]
ConfigObject = Annotated[
    JsonObject,
    Field(
        description="A personal channel's config, with the fields of a notification provider "
        'of that type: emailConfig `{to: [addresses]}` (`{"to": []}`: your own address), '
        "slackConfig, discordConfig, teamsConfig `{webhookUrl}`, webhookConfig "
        "`{url, headers?, secret?}`, smsConfig `{to, from, accountSid, authToken}`. `{}` "
        "unsets it. Checked like a provider's config (422 naming the field); one sent back "
        "as read (masked secrets included) is kept as it is."
    ),
]


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


class LoginRequest(Input):
    email: Annotated[str, Field(max_length=320)]
    password: Annotated[str, Field(max_length=1024)]


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


class NotificationSwitchesIn(Input):
    """Switches left out or null stay as they are."""

    email: bool | None = None
    sms: bool | None = None
    slack: bool | None = None
    discord: bool | None = None
    teams: bool | None = None
    webhook: bool | None = None


class ProfileSettingsIn(Input):
    """Fields left out or null stay as they are."""

    theme: Theme | None = None
    notifications: NotificationSwitchesIn | None = None
    preferredNotification: Channel | None = None
    emailConfig: ConfigObject | None = None
    smsConfig: ConfigObject | None = None
    slackConfig: ConfigObject | None = None
    webhookConfig: ConfigObject | None = None


class UserSettingsFields(Input):
    """Fields left out or null stay as they are."""

    language: Language | None = None
    timezone: TimeZone | None = None
    theme: Theme | None = None
    notifications: NotificationSwitchesIn | None = None
    preferredNotification: Channel | None = None
    emailConfig: ConfigObject | None = None
    slackConfig: ConfigObject | None = None
    discordConfig: ConfigObject | None = None
    teamsConfig: ConfigObject | None = None
    webhookConfig: ConfigObject | None = None


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


class ProfileNotifications(BaseModel):
    email: bool
    sms: bool
    slack: bool
    webhook: bool


class ProfileSettingsOut(BaseModel):
    theme: Theme
    notifications: ProfileNotifications
    preferredNotification: Channel
    emailConfig: dict[str, Any] = Field(description=SHOWN_CONFIG)
    smsConfig: dict[str, Any] = Field(description=SHOWN_CONFIG)
    slackConfig: dict[str, Any] = Field(description=SHOWN_CONFIG)
    webhookConfig: dict[str, Any] = Field(description=SHOWN_CONFIG)
    channelStatus: ChannelStatus


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


class SettingsNotifications(BaseModel):
    email: bool
    slack: bool
    discord: bool
    teams: bool
    webhook: bool


class UserSettingsOut(BaseModel):
    language: Language
    timezone: str
    theme: Theme
    notifications: SettingsNotifications
    preferredNotification: Channel
    emailConfig: dict[str, Any] = Field(description=SHOWN_CONFIG)
    slackConfig: dict[str, Any] = Field(description=SHOWN_CONFIG)
    discordConfig: dict[str, Any] = Field(description=SHOWN_CONFIG)
    teamsConfig: dict[str, Any] = Field(description=SHOWN_CONFIG)
    webhookConfig: dict[str, Any] = Field(description=SHOWN_CONFIG)
    channelStatus: ChannelStatus


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
