"""Fields of partial updates (PATCH and PUT bodies) that may be left out but not nulled.

``Omittable[X]`` is the one way every update schema says so: left out, the field is ``None``
in Python and unchanged; sent as ``null``, it is refused with "may not be null". The OpenAPI
schema publishes plain ``X`` (no ``null`` branch, no ``default: null``), so clients and
schemathesis see the rule. Fields where ``null`` means something (clear, unlink, unchanged)
stay ``X | None`` and say what ``null`` does in their description.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

T = TypeVar("T")


def _refuse_null(value: Any) -> Any:
    # Runs only for a value that was sent: an omitted field keeps its default untouched.
    if value is None:
        raise PydanticCustomError("not_null", "may not be null")
    return value


def _without_null(schema: dict[str, Any]) -> None:
    branches = schema.pop("anyOf", None)
    if isinstance(branches, list):
        kept = [branch for branch in branches if branch != {"type": "null"}]
        if len(kept) == 1:
            schema.update(kept[0])
        else:
            schema["anyOf"] = kept
    # Leaving the field out keeps the stored value; there is no default to publish.
    schema.pop("default", None)


Omittable = Annotated[
    T | None, BeforeValidator(_refuse_null), Field(json_schema_extra=_without_null)
]
