"""Request bodies are strict; data read back from the database is not refused for fields this
version no longer knows (kit/inputs.py)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field, ValidationError

from upwatch.kit.inputs import MAX_OBJECT_DEPTH, Input, check_json_object


class Switches(Input):
    email: bool = True


class Channel(Input):
    url: str
    switches: Switches | None = None


STORED = {"url": "https://hooks.example.com/x", "note": "old", "switches": {"sms": True}}


def test_a_request_with_fields_the_model_does_not_know_is_refused_at_every_level() -> None:
    with pytest.raises(ValidationError) as refused:
        Channel.model_validate(STORED)
    assert [(e["loc"], e["type"]) for e in refused.value.errors()] == [
        (("switches", "sms"), "unknown_field"),
        (("note",), "unknown_field"),
    ]


def test_stored_data_with_fields_this_version_does_not_know_still_loads() -> None:
    channel = Channel.from_stored(STORED)
    assert channel.model_dump() == {
        "url": "https://hooks.example.com/x",
        "switches": {"email": True},
    }


def test_stored_data_is_still_validated_field_by_field() -> None:
    with pytest.raises(ValidationError):
        Channel.from_stored({"url": 5, "note": "old"})


def _nested(levels: int, inner: Any = None) -> Any:
    """``levels`` objects and lists inside each other, built without recursion."""
    value = inner
    for level in range(levels):
        value = {"a": value} if level % 2 else [value]
    return value


def test_a_free_form_object_within_the_depth_limit_is_accepted() -> None:
    value = {"a": _nested(MAX_OBJECT_DEPTH - 1)}
    assert check_json_object(value) is value


@pytest.mark.parametrize("levels", [MAX_OBJECT_DEPTH, 350, 100_000])
def test_a_free_form_object_nested_too_deep_is_refused_in_words_however_deep(levels: int) -> None:
    # Deeper than Python's stack: the depth is measured without recursion.
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_OBJECT_DEPTH} levels"):
        check_json_object({"a": _nested(levels)})


class Ordered(Input):
    order: Annotated[int, Field(ge=0)] | None = None
    count: int = 0


def test_a_boolean_in_a_number_field_is_refused_not_read_as_zero_or_one() -> None:
    for body in ({"order": False}, {"count": True}):
        with pytest.raises(ValidationError) as refused:
            Ordered.model_validate(body)
        assert [e["type"] for e in refused.value.errors()] == ["int_type"]
    assert Ordered.model_validate({"order": 3, "count": 0}) == Ordered(order=3, count=0)
    assert Ordered.model_validate({"order": None}).order is None
