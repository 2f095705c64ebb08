"""API shapes more than one domain uses, and the base of every response model.

The kit is the base layer: nothing here may import a domain (tests/test_architecture.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from email_validator import EmailNotValidError, validate_email
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, model_validator
from pydantic.alias_generators import to_camel

Role = Literal["user", "admin", "project_manager", "super_admin"]


def normalize_email(value: str) -> str:
    """Trim, validate the syntax, lower-case: one spelling per address.

    Domains need not be globally deliverable: self-hosted operators use internal mail
    domains (``ops@corp.internal``) and RFC 2606 ``.test`` names in trial installs, and no
    DNS lookup happens on a request.
    """
    try:
        checked = validate_email(
            value.strip(),
            check_deliverability=False,
            globally_deliverable=False,
            test_environment=True,
        )
    except EmailNotValidError as exc:
        raise ValueError(f"not a valid e-mail address ({exc})") from exc
    return checked.normalized.lower()


Email = Annotated[
    str,
    Field(max_length=320, json_schema_extra={"format": "email"}),
    AfterValidator(normalize_email),
]
Password = Annotated[str, Field(min_length=8, max_length=128)]


class _Overlay:
    """A row seen with some attributes replaced (masked or computed values)."""

    def __init__(self, row: object, values: dict[str, Any]) -> None:
        self._row = row
        self._values = values

    def __getattr__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        return getattr(self._row, name)


class RowOut(BaseModel):
    """A response read from a database row: ``XOut.model_validate(row, context=...)``.

    Fields are named like the row's columns (snake_case) and published in camelCase, the
    API's spelling; both spellings construct one by keyword. Values the row does not hold
    as such (masked, computed from settings or the clock) come from ``derived``, so a model
    says in one place what it publishes differently from what is stored.
    """

    model_config = ConfigDict(from_attributes=True, populate_by_name=True, alias_generator=to_camel)

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        """Field values (by field name) that replace or complete the row's attributes."""
        return {}

    @model_validator(mode="before")
    @classmethod
    def _with_derived(cls, data: Any, info: ValidationInfo) -> Any:
        # Only rows: keyword construction and dicts are taken as given.
        if isinstance(data, dict | BaseModel):
            return data
        values = cls.derived(data, info.context)
        return _Overlay(data, values) if values else data


class MessageOut(BaseModel):
    message: str


class DeletedOut(BaseModel):
    id: str
    deleted: Literal[True] = True
