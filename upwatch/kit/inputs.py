"""The base of every request body model."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

# Published on every string property so clients (and schemathesis) know the rule below.
NO_NUL_PATTERN = "^[^\\u0000]*$"


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


class Input(BaseModel):
    """Unknown fields are ignored (contract §2); NUL characters are refused in every string,
    because PostgreSQL text cannot hold them and SQLite would store what PostgreSQL refuses."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=_schema_extra)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul_characters(cls, value: Any) -> Any:
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("NUL characters are not allowed")
        return value
