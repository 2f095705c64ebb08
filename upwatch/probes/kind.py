"""What a monitor type is: one declaration per type, in the type's own module.

The declaration says everything the rest of the service needs to know about the type: its
name, its config model (fields, defaults, bounds), its console form and its probe. The API's
monitor schemas, its ``type`` enum, ``upwatch apply`` and the console are derived from the
declarations that ``registry.py`` collects, so adding a type is one module and its tests.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cached_property
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from upwatch.probes.probe import Probe

# Marks a config field whose value is a credential: masked in every response, kept when sent
# back masked, given by environment variable in config files. Published as `x-secret`.
_SECRET_MARK = "x-secret"  # noqa: S105 - the name of a schema mark


def secret(description: str = "", **given: Any) -> Any:
    """A secret config field (``password: str | None = secret(...)``)."""
    return Field(
        default=given.pop("default", None),
        description=f"{description} Secret: masked in responses; sent back masked, it keeps "
        "the stored value".strip(),
        json_schema_extra={_SECRET_MARK: True},
        **given,
    )


def is_secret(info: FieldInfo) -> bool:
    extra = info.json_schema_extra
    return isinstance(extra, dict) and extra.get(_SECRET_MARK) is True


@dataclass(frozen=True)
class FormField:
    """A box of the console's new-monitor form, filling the API field ``name``."""

    name: str
    label: str
    input: str = "text"  # the HTML input type
    hint: str = ""


@dataclass(frozen=True)
class MonitorKind:
    """One monitor type. ``config`` holds the fields the type reads: a required one is what
    the type checks (its target, never null), a default is what is stored when the field is
    left out, and an annotation that takes ``None`` lets an update clear the field."""

    name: str  # the API's `type`
    label: str  # the console's name for it
    rank: int  # where it is listed: the API's enum and unions, the console's choice
    config: type[BaseModel]
    probe: Probe
    form: tuple[FormField, ...] = ()
    # The password in `url` is a secret (database types): masked, kept when sent back masked.
    url_password_secret: bool = False
    # The schemes its `url` may have, where it has one.
    url_schemes: tuple[str, ...] = ("http", "https")
    # The type reads a certificate (http, smtp, ...): `certificateWarningDays` applies.
    speaks_tls: bool = False

    @property
    def secrets(self) -> tuple[str, ...]:
        """Its secret fields (``secret``), by API name."""
        return tuple(n for n, info in self.config.model_fields.items() if is_secret(info))

    @property
    def title(self) -> str:
        """How schema names spell it (``HttpMonitorCreate``)."""
        return self.name.capitalize()

    @property
    def fields(self) -> tuple[str, ...]:
        """Its own fields, in their order (what ``upwatch export`` writes for it)."""
        return tuple(self.config.model_fields)

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(n for n, info in self.config.model_fields.items() if info.is_required())

    @property
    def defaults(self) -> dict[str, Any]:
        """What is stored for a field left out (or sent as null) when a monitor is created: a
        copy, so no two monitors share a default list."""
        return copy.deepcopy(self._defaults)

    @cached_property
    def _defaults(self) -> dict[str, Any]:
        # Read from the model once: asking pydantic for every default on each create cost
        # about half a millisecond a monitor.
        found = {
            name: info.get_default(call_default_factory=True)
            for name, info in self.config.model_fields.items()
            if not info.is_required()
        }
        return {name: value for name, value in found.items() if value is not None}

    def nullable(self, field: str) -> bool:
        """Whether an update may send ``null`` for ``field`` (a target's null is refused by
        the service, for this type only: other types share the field)."""
        info = self.config.model_fields[field]
        return info.is_required() or accepts_none(info.annotation)


def accepts_none(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, UnionType) and NoneType in get_args(annotation)
