"""API shapes more than one domain uses, and the base of every response model.

The kit is the base layer: nothing here may import a domain (tests/test_architecture.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

from email_validator import EmailNotValidError, validate_email
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
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


class RowOut(BaseModel):
    """A response read from a database row: ``RowOut.model_validate(row)``.

    Fields are named like the row's columns (snake_case) and published in camelCase, the
    API's spelling; both spellings construct one by keyword. Values a row does not hold
    (masked, computed) are set by a validator of the model or by the endpoint, explicitly.
    """

    model_config = ConfigDict(from_attributes=True, populate_by_name=True, alias_generator=to_camel)


class MessageOut(BaseModel):
    message: str


class DeletedOut(BaseModel):
    id: str
    deleted: Literal[True] = True
