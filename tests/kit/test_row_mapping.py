"""RowOut: responses read from rows by pydantic, with derived values in one place."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from upwatch.kit.schemas import RowOut


@dataclass
class Row:
    id: str
    project_id: str
    token: str
    created_at: datetime


class ThingOut(RowOut):
    id: str
    project_id: str
    token: str
    created_at: datetime

    @classmethod
    def derived(cls, row: Any, context: Any) -> dict[str, Any]:
        return {"token": f"****{row.token[-2:]}"}


ROW = Row(id="t1", project_id="p1", token="secret-42", created_at=datetime(2026, 1, 2, tzinfo=UTC))


def test_a_row_is_published_in_camel_case_with_its_derived_values() -> None:
    published = ThingOut.model_validate(ROW).model_dump(mode="json", by_alias=True)
    assert published == {
        "id": "t1",
        "projectId": "p1",
        "token": "****42",
        "createdAt": "2026-01-02T00:00:00Z",
    }


def test_a_response_validated_again_is_not_derived_twice() -> None:
    once = ThingOut.model_validate(ROW)
    assert ThingOut.model_validate(once).token == "****42"
    assert ThingOut.model_validate(once.model_dump(by_alias=True)).token == "****42"


def test_a_response_is_built_by_keyword_in_either_spelling() -> None:
    stamp = ROW.created_at
    snake = ThingOut(id="t1", project_id="p1", token="x", created_at=stamp)
    camel = ThingOut.model_validate(
        {"id": "t1", "projectId": "p1", "token": "x", "createdAt": stamp}
    )
    assert snake == camel
