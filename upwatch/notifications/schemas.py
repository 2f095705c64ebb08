"""Request and response shapes of notification providers and alert history (contract §9)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import ConfigDict, Field, GetJsonSchemaHandler, create_model
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from upwatch.kit.declared import DeclaredKey, SecretRefOut, SecretRefsIn, shown_refs
from upwatch.kit.inputs import SINGLE_LINE_PATTERN, Input, JsonObject, TagInWords, worded
from upwatch.kit.partial import Omittable
from upwatch.kit.schemas import RowOut
from upwatch.notifications.channels import IN_FORM_ORDER, Channel, ChannelName, masked

Name = Annotated[str, Field(min_length=1, max_length=100, pattern=SINGLE_LINE_PATTERN)]
QuietTime = Annotated[
    str,
    Field(
        pattern=worded(
            r"^([0-1]?[0-9]|2[0-3]):[0-5][0-9]$", "a time of day as HH:MM (00:00 to 23:59)"
        ),
        description="HH:MM in the project owner's time zone",
    ),
]


Repeat = Annotated[
    int,
    Field(
        ge=5,
        le=1440,
        description="Remind every so many minutes while an incident this provider was alerted "
        "for is open and no one acknowledged it (quiet hours respected)",
    ),
]


class _ProviderFields(Input):
    name: Name | None = None
    isEnabled: bool | None = None
    repeatEveryMinutes: Repeat | None = None
    quietHoursStart: QuietTime | None = Field(
        default=None, description="With quietHoursEnd; null or left out with it: no quiet hours"
    )
    quietHoursEnd: QuietTime | None = Field(
        default=None, description="With quietHoursStart; null or left out with it: no quiet hours"
    )
    key: DeclaredKey | None = None
    secretRefs: SecretRefsIn | None = None


class _NewProvider(_ProviderFields):
    projectId: Annotated[str, Field(max_length=32)]
    name: Name


class TypedProvider(_NewProvider):
    """A new provider of one type; each channel's model narrows ``type`` and ``config``."""

    type: str
    config: Input


def _provider_create(channel: Channel) -> type[TypedProvider]:
    """One model per type, so the schema itself says what config each type needs."""
    tag: Any = Literal[channel.name]
    return create_model(
        f"{type(channel).__name__}ProviderCreate",
        __base__=TypedProvider,
        __module__=__name__,
        type=(tag, ...),
        config=(channel.config_model, ...),
    )


if TYPE_CHECKING:
    # For type checkers, a union of one: every member is a ``TypedProvider``.
    NewProvider = TypedProvider | TypedProvider
else:
    NewProvider = Union[tuple(_provider_create(channel) for channel in IN_FORM_ORDER)]  # noqa: UP007
ProviderCreate = Annotated[NewProvider, TagInWords("type")]


class ProviderOut(RowOut):
    id: str
    project_id: str
    type: ChannelName
    name: str
    config: dict[str, Any] = Field(description="Secrets are masked")
    is_enabled: bool
    quiet_hours_start: str | None
    quiet_hours_end: str | None
    repeat_every_minutes: int | None = Field(description="null: no reminders")
    key: str | None = Field(description="Its key in a config file (`upwatch apply`)")
    secret_refs: dict[str, SecretRefOut] = Field(
        description="Secret config fields a config file gives by environment variable"
    )
    created_at: datetime
    updated_at: datetime

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        """Secrets masked, as in every response; digests for callers who may write."""
        return {
            "config": masked(row.type, row.config or {}),
            "secret_refs": shown_refs(row.secret_refs),
        }


class ProviderUpdate(Input):
    """The seed's fields; fields left out stay as they are. `config` replaces the stored one
    and is checked against the provider's (possibly new) `type`, so changing `type` requires a
    `config` for the new type; masked secrets sent back unchanged keep their stored value.
    Quiet hours need both ends; both null removes them. `name`, `isEnabled`, `type` and
    `projectId` may not be null."""

    resource = ProviderOut

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        # The rule above in JSON Schema (OpenAPI 3.1): a `type` comes with a `config`.
        handler.resolve_ref_schema(schema)["dependentRequired"] = {"type": ["config"]}
        return schema

    name: Omittable[Name] = None
    isEnabled: Omittable[bool] = None
    quietHoursStart: QuietTime | None = Field(
        default=None, description="null removes, with quietHoursEnd null too"
    )
    quietHoursEnd: QuietTime | None = Field(
        default=None, description="null removes, with quietHoursStart null too"
    )
    repeatEveryMinutes: Repeat | None = Field(default=None, description="null: no reminders")
    type: Omittable[ChannelName] = None
    config: JsonObject | None = Field(
        default=None, description="The whole config for the type; null or left out: unchanged"
    )
    projectId: Omittable[Annotated[str, Field(max_length=32)]] = None
    key: DeclaredKey | None = Field(default=None, description="null removes it")
    secretRefs: SecretRefsIn | None = None


class AlertAttemptOut(RowOut):
    attempt: int
    outcome: Literal["sent", "retry", "failed"] = Field(
        description="`retry`: this attempt failed and another follows after a jittered "
        "back-off, or after the wait the receiver asked for with `Retry-After` (429, 503), "
        "never later than `UPWATCH_ALERT_RETRY_MAX_SECONDS`"
    )
    error: str | None
    duration_ms: float | None
    attempted_at: datetime


class AlertOut(RowOut):
    """One alert to one destination and what became of it: a notification provider, or a
    member's personal channel from their settings (`providerId` null, `userId` set)."""

    # Alert keys are integers in the database, strings in the API.
    model_config = ConfigDict(coerce_numbers_to_str=True)

    id: str
    provider_id: str | None = Field(
        description="The provider; null for a personal channel or a deleted provider"
    )
    provider_type: ChannelName
    provider_name: str = Field(
        description="The provider's name, or `personal <channel>: <member's e-mail>`"
    )
    user_id: str | None = Field(
        description="The member whose personal channel this alert went to; null for a provider"
    )
    channel: ChannelName = Field(description="How it was sent (the provider type)")
    incident_id: str | None
    event: Literal["incident.opened", "incident.reminder", "incident.resolved", "test"]
    status: Literal["pending", "sent", "failed", "suppressed"]
    reason: str | None = Field(description="Why it was suppressed, or why it failed")
    attempts: list[AlertAttemptOut]
    created_at: datetime
    sent_at: datetime | None

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        """The attempts are rows of their own (``context``: those of this alert)."""
        return {"attempts": context["attempts"], "channel": row.provider_type}
