"""Request bodies are strict; data read back from the database is not refused for fields this
version no longer knows (kit/inputs.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from upwatch.kit.inputs import Input


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
