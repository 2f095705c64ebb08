"""The base of every request body model, and the free-form JSON object type."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

# Published on every string property so clients (and schemathesis) know the rule below.
NO_NUL_PATTERN = "^[^\\u0000]*$"
# Names and subjects end up in e-mail headers and single-line displays.
SINGLE_LINE_PATTERN = "^[^\\u0000-\\u001f\\u007f]*$"

MAX_OBJECT_DEPTH = 8
MAX_OBJECT_BYTES = 16_384


def _document_no_nul(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "string" and "enum" not in node and "const" not in node:
            node.setdefault("pattern", NO_NUL_PATTERN)
        for value in node.values():
            _document_no_nul(value)
    elif isinstance(node, list):
        for item in node:
            _document_no_nul(item)


def _schema_extra(schema: dict[str, Any], _model: type[Any]) -> None:
    _document_no_nul(schema.get("properties", {}))


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def check_json_object(value: dict[str, Any]) -> dict[str, Any]:
    """A free-form object both databases can store: finite numbers, valid Unicode, bounded."""
    if _depth(value) > MAX_OBJECT_DEPTH:
        raise ValueError(f"nested deeper than {MAX_OBJECT_DEPTH} levels")
    try:
        encoded = json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except ValueError as exc:
        raise ValueError("numbers must be finite") from exc
    except UnicodeEncodeError as exc:
        raise ValueError("contains text that is not valid Unicode") from exc
    if len(encoded) > MAX_OBJECT_BYTES:
        raise ValueError(f"larger than {MAX_OBJECT_BYTES} bytes as JSON")
    return value


JsonObject = Annotated[dict[str, Any], Field(max_length=50), AfterValidator(check_json_object)]


def _is_flag(annotation: Any) -> bool:
    """Whether a field is a boolean (or an optional one)."""
    if annotation is bool:
        return True
    members = [a for a in get_args(annotation) if a is not type(None)]
    return get_origin(annotation) in (Union, UnionType) and members == [bool]


class Input(BaseModel):
    """Unknown fields are ignored (contract §2). NUL characters and unpaired surrogates are
    refused in every string: PostgreSQL text cannot hold them, and SQLite would store what
    PostgreSQL refuses."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=_schema_extra)

    @model_validator(mode="before")
    @classmethod
    def _strict_flags(cls, data: Any) -> Any:
        """true/false only: pydantic would read 0, 1, "yes" and "off" as booleans, and the
        contract rejects wrong types. (A model validator: field validators on every field
        would disturb discriminated unions.)"""
        if not isinstance(data, dict):
            return data
        wrong = {
            key: [data[key]]  # a value no boolean validation accepts: the field's own error
            for name, info in cls.model_fields.items()
            if _is_flag(info.annotation)
            and not isinstance(data.get(key := info.alias or name), bool | None)
        }
        return {**data, **wrong} if wrong else data

    @field_validator("*", mode="after")
    @classmethod
    def _storable_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            if "\x00" in value:
                raise ValueError("NUL characters are not allowed")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError("not valid Unicode text") from exc
        return value


_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")


def iso_text_only(value: Any) -> Any:
    """Refuse numbers, which pydantic would read as Unix time: the schema publishes
    `format: date-time` (ISO 8601 text), and the contract's timestamps are ISO 8601."""
    if isinstance(value, int | float) or (isinstance(value, str) and _NUMBER.fullmatch(value)):
        raise ValueError("an ISO 8601 date-time is expected, e.g. 2026-11-22T06:00:00Z")
    return value


def _to_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # 0001-01-01T00:00+01:00 has no UTC form
        raise ValueError("out of range once converted to UTC") from exc


# A point in time with its offset (ISO 8601, e.g. 2026-11-22T06:00:00Z), kept in UTC.
Instant = Annotated[AwareDatetime, BeforeValidator(iso_text_only), AfterValidator(_to_utc)]
