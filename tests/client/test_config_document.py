"""The config file's shape: the published JSON Schema is the one the code checks against, the
documented example passes both, and every error names its line and field. Then the plan, a
pure function: matched by key, secrets by digest, masks read as the stored value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from argon2 import PasswordHasher

from upwatch.client.apply import verify
from upwatch.client.document import FileError, checked, json_schema, parse
from upwatch.client.plan import plan

pytestmark = pytest.mark.db_independent

DOCS = Path(__file__).resolve().parents[2] / "docs"
EXAMPLE = DOCS / "examples" / "upwatch.yaml"
SECRETS = {"SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T/B/x", "API_HEALTH_TOKEN": "t"}


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((DOCS / "upwatch-config.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_published_schema_is_the_one_the_code_checks_against() -> None:
    published = json.loads((DOCS / "upwatch-config.schema.json").read_text())
    assert published == json_schema(), "run: upwatch schema > docs/upwatch-config.schema.json"


def test_the_documented_example_passes_the_schema_and_the_checks(environment: None) -> None:
    document = parse(EXAMPLE.read_text(), "upwatch.yaml")
    validator().validate(document.data)
    config = checked(document)
    assert [m.key for m in config.monitors] == ["api", "database", "website", "nightly-backup"]


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("version: 1\nmonitors:\n  - name: A\n    type: tcp\n", 3, "monitors[0].key"),
        ("version: 2\n", 1, "version"),
        (
            "version: 1\nstatusPages:\n  - key: a\n    name: A\n    slug: a\n    theme: pink\n",
            6,
            "statusPages[0].theme",
        ),
        (
            "version: 1\nproviders:\n  - key: p\n    type: pager\n    name: P\n",
            4,
            "providers[0].type",
        ),
    ],
)
def test_the_schema_and_the_checks_refuse_the_same_files(text: str, line: int, field: str) -> None:
    assert not validator().is_valid(yaml.safe_load(text))
    with pytest.raises(FileError) as refused:
        checked(parse(text, "f.yaml"))
    assert any(p.startswith(f"f.yaml:{line}: {field}") for p in refused.value.problems), (
        refused.value.problems
    )


def test_rules_beyond_the_schema_are_named_by_line_too(monkeypatch: pytest.MonkeyPatch) -> None:
    text = """version: 1
monitors:
  - key: a
    name: A
    type: http
    url: http://127.0.0.1:9/
    intervalSeconds: 60
    timeoutSeconds: 60
  - key: a
    name: B
    type: tcp
    host: 127.0.0.1
    port: 9
    dependsOn: [c]
"""
    with pytest.raises(FileError) as refused:
        checked(parse(text, "f.yaml"))
    problems = refused.value.problems
    assert "f.yaml:9: monitors[1].key: 'a' is given twice" in problems
    assert (
        "f.yaml:14: monitors[1].dependsOn[0]: no monitor with the key 'c' in this file" in problems
    )


# ---- the plan ------------------------------------------------------------------------------


def server_monitor(**fields: Any) -> dict[str, Any]:
    return {
        "id": "m1",
        "key": "api",
        "type": "http",
        "name": "API",
        "url": "http://127.0.0.1:9/",
        "intervalSeconds": 60,
        "timeoutSeconds": 10.0,
        "headers": {"Authorization": "****alue"},
        "secretRefs": {},
        "dependsOn": [],
        **fields,
    }


def planned(entry: dict[str, Any], current: dict[str, Any], env: dict[str, str]) -> list[str]:
    result = plan(
        {"monitors": [entry]},
        {"monitors": [current]},
        prune=False,
        environment=env,
        verify=verify,
    )
    (change,) = result.changes
    return [change.action, *change.fields]


def test_a_secret_by_reference_is_unchanged_only_when_its_digest_matches() -> None:
    digest = PasswordHasher(time_cost=1, memory_cost=64, parallelism=1).hash("Bearer value")
    current = server_monitor(
        secretRefs={"headers.Authorization": {"env": "TOKEN", "digest": digest}}
    )
    entry = {"key": "api", "type": "http", "headers": {"Authorization": {"env": "TOKEN"}}}
    assert planned(entry, current, {"TOKEN": "Bearer value"}) == ["unchanged"]
    assert planned(entry, current, {"TOKEN": "Bearer other"}) == ["update", "headers"]
    renamed = {**entry, "headers": {"Authorization": {"env": "NEW_NAME"}}}
    assert planned(renamed, current, {"NEW_NAME": "Bearer value"}) == ["update", "headers"]


def test_a_mask_in_the_file_is_the_stored_secret_and_numbers_compare_by_value() -> None:
    entry = {"key": "api", "type": "http", "headers": {"Authorization": "****alue"}}
    assert planned({**entry, "timeoutSeconds": 10}, server_monitor(), {}) == ["unchanged"]
    assert planned({**entry, "intervalSeconds": 120}, server_monitor(), {}) == [
        "update",
        "intervalSeconds",
    ]


def test_a_new_type_replaces_the_monitor_and_prune_spares_objects_without_a_key() -> None:
    assert planned({"key": "api", "type": "tcp"}, server_monitor(), {}) == ["replace", "type"]
    result = plan(
        {"monitors": []},
        {"monitors": [server_monitor(), server_monitor(id="m2", key=None)]},
        prune=True,
        environment={},
        verify=verify,
    )
    assert [(c.action, c.key) for c in result.changes] == [("delete", "api")]


def test_a_list_of_secrets_takes_a_reference_in_each_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NTFY_URL", "ntfys://ntfy.sh/shop-oncall")
    monkeypatch.setenv("DISCORD_URL", "discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV")
    text = """version: 1
providers:
  - key: phones
    type: apprise
    name: Phones
    config:
      urls: [{env: NTFY_URL}, {env: DISCORD_URL}]
"""
    assert validator().is_valid(yaml.safe_load(text))
    config = checked(parse(text, "f.yaml"))
    assert [p.key for p in config.providers] == ["phones"]
    single = text.replace("[{env: NTFY_URL}, {env: DISCORD_URL}]", "{env: NTFY_URL}")
    assert not validator().is_valid(yaml.safe_load(single))
