"""Monitor types declare themselves (probes/kind.py); what the API, ``upwatch apply`` and the
console show is derived from the declarations, so a new type needs no other change."""

from __future__ import annotations

from typing import Annotated, Any, get_args

import pytest
from pydantic import Field, TypeAdapter, ValidationError

from upwatch.client.apply import TARGETS, exported
from upwatch.console.endpoints.monitor_changes import TYPE_CHOICES
from upwatch.console.monitor_form import type_boxes
from upwatch.kit.inputs import Input
from upwatch.monitors.schemas import (
    MONITOR_CREATES,
    TYPE_FIELDS,
    MonitorCreate,
    MonitorOut,
    MonitorUpdate,
)
from upwatch.probes.kind import MonitorKind
from upwatch.probes.registry import KINDS, PROBES, kind_of
from upwatch.probes.tcp import TcpProbe

pytestmark = pytest.mark.db_independent

CREATE = TypeAdapter(MonitorCreate)


def test_the_types_are_listed_in_their_rank_order_everywhere() -> None:
    # The names exactly as the issue and the docs write them, in rank order.
    names = [
        "http",
        "tcp",
        "dns",
        "tls",
        "heartbeat",
        "ping",
        "udp",
        "smtp",
        "imap",
        "pop3",
        "websocket",
        "grpc",
        "postgres",
        "mysql",
        "redis",
        "domain",
    ]

    assert list(KINDS) == names
    assert [kind.rank for kind in KINDS.values()] == sorted(kind.rank for kind in KINDS.values())
    assert list(get_args(MonitorOut.model_fields["type"].annotation)) == names
    assert [model.__name__ for model in MONITOR_CREATES] == [
        f"{name.capitalize()}MonitorCreate" for name in names
    ]
    assert [name for name, _label in TYPE_CHOICES] == names


def test_a_type_requires_its_target_on_create_and_nothing_else() -> None:
    for kind in KINDS.values():
        model = next(m for m in MONITOR_CREATES if m.__name__.startswith(kind.title))
        required = {name for name, info in model.model_fields.items() if info.is_required()}
        assert required == {"projectId", "name", "type", *kind.targets}


def test_a_types_create_body_declares_its_targets_as_the_type_does() -> None:
    # A field types declare differently (`url`: http(s) or ws(s)) is loose in the common
    # schema; each type's create body still says its own bounds.
    for kind in KINDS.values():
        model = next(m for m in MONITOR_CREATES if m.__name__ == f"{kind.title}MonitorCreate")
        for name in kind.targets:
            declared = kind.config.model_fields[name]
            assert repr(model.model_fields[name].metadata) == repr(declared.metadata), (
                kind.name,
                name,
            )


def test_a_field_several_types_share_alike_keeps_their_declaration() -> None:
    for name in ("host", "port"):
        shared = TYPE_FIELDS[name]
        for kind in KINDS.values():
            info = kind.config.model_fields.get(name)
            if info is not None and name in kind.targets:
                assert repr(info.metadata) == repr(shared.metadata), (kind.name, name)


def test_a_field_left_out_is_stored_as_its_type_declares() -> None:
    def columns(**body: Any) -> dict[str, Any]:
        made = CREATE.validate_python({"projectId": "p", "name": "n", **body})
        return made.columns(exclude=set())  # type: ignore[no-any-return]

    assert columns(type="tls", host="example.com")["port"] == 443
    assert columns(type="dns", host="example.com", recordType=None)["record_type"] == "A"
    assert columns(type="http", url="https://example.com")["method"] == "GET"
    # Another type's default is not this type's: the column keeps its own.
    assert "port" not in columns(type="http", url="https://example.com")
    assert "record_type" not in columns(type="tcp", host="example.com", port=1)


def test_an_update_may_clear_a_field_only_where_a_type_lets_it() -> None:
    with pytest.raises(ValidationError, match="may not be null"):
        MonitorUpdate.model_validate({"method": None})
    cleared = MonitorUpdate.model_validate({"recordType": None, "port": None, "url": None})
    assert cleared.model_fields_set == {"recordType", "port", "url"}


def test_export_writes_the_fields_of_the_monitors_type() -> None:
    monitor = {"id": "m", "key": "db", "name": "DB", "type": "tcp", "host": "db", "port": 5432}
    monitor |= {"url": "https://ignored.example", "method": "GET"}

    document = exported(
        {"monitors": [monitor], "providers": [], "statusPages": [], "maintenance": []},
        lambda _: None,
    )

    assert document["monitors"] == [
        {"key": "db", "name": "DB", "type": "tcp", "host": "db", "port": 5432}
    ]
    assert {"url", "host", "port"} == TARGETS


def test_the_console_form_of_a_type_has_a_box_for_each_of_its_fields() -> None:
    for kind in KINDS.values():
        assert [box.name for box in type_boxes(kind)] == list(kind.config.model_fields)
    http = {box.name: box for box in type_boxes(KINDS["http"])}
    # A label the type declares is kept; the others are the field's name in words.
    assert (http["url"].label, http["expectedStatusCodes"].label) == (
        "URL",
        "Expected status codes",
    )
    assert http["method"].choices[0] == ("GET", "GET")
    assert (http["headers"].shape, http["body"].input) == ("pairs", "textarea")


def test_an_unknown_type_is_named_when_looked_up() -> None:
    with pytest.raises(ValueError, match="unknown monitor type 'gopher'"):
        kind_of("gopher")


def test_a_declared_type_is_a_name_a_config_model_and_a_probe() -> None:
    class PortOnly(Input):
        port: Annotated[int, Field(ge=1)]
        note: str | None = "x"

    kind = MonitorKind(name="demo", label="Demo", rank=99, config=PortOnly, probe=TcpProbe())

    assert kind.title == "Demo"
    assert kind.fields == ("port", "note")
    assert kind.targets == ("port",)
    assert kind.defaults == {"note": "x"}
    assert kind.nullable("note")
    assert kind.nullable("port")
    assert set(PROBES) == set(KINDS)


def test_every_error_kind_has_words_for_alerts() -> None:
    from upwatch.notifications.events import FAILURE_WORDS
    from upwatch.probes.outcome import ErrorKind

    assert {kind.value for kind in ErrorKind} <= set(FAILURE_WORDS)
