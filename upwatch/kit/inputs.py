"""The base of every request body model, and the free-form JSON object type."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

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


class Input(BaseModel):
    """Unknown fields are ignored (contract §2). NUL characters and unpaired surrogates are
    refused in every string: PostgreSQL text cannot hold them, and SQLite would store what
    PostgreSQL refuses."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=_schema_extra)

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
