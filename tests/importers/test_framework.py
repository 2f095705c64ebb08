"""The shared part of ``upwatch import``: keys, secrets, the report's printed form, entries the
API would refuse, and a file written whole or not at all."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from upwatch.client.parsers import IMPORT_SOURCES
from upwatch.importers.headers import without_credentials
from upwatch.importers.output import Imported, slug, write
from upwatch.importers.registry import SOURCES
from upwatch.importers.source import SourceError

SLACK = "https://hooks.slack.com/services/T000/B000/very-secret-token"


def test_keys_are_made_from_names_and_numbered_when_taken() -> None:
    imported = Imported("Test")
    assert imported.key("monitors", "My API (prod)") == "my-api-prod"
    assert imported.key("monitors", "My API: prod") == "my-api-prod-2"
    assert imported.key("providers", "My API: prod") == "my-api-prod"
    assert imported.key("monitors", "Café") == "cafe"
    assert imported.key("monitors", "***") == "monitor"
    assert slug("x" * 100, "monitor") == "x" * 56


def test_a_secret_becomes_an_env_reference_named_in_the_report_and_never_written() -> None:
    imported = Imported("Test")
    item = imported.item("alert contact", "Team")
    key = imported.key("providers", "Team")
    config = {"webhookUrl": imported.secret(item, "providers", key, "webhookUrl", SLACK)}
    imported.add("providers", {"key": key, "type": "slack", "name": "Team", "config": config}, item)
    text = imported.text()
    report = imported.report.text()
    assert "UPWATCH_IMPORT_PROVIDER_TEAM_WEBHOOKURL" in text
    assert yaml.safe_load(text)["providers"][0]["config"] == {
        "webhookUrl": {"env": "UPWATCH_IMPORT_PROVIDER_TEAM_WEBHOOKURL"}
    }
    assert "very-secret-token" not in text + report
    assert imported.secret_values() == {"UPWATCH_IMPORT_PROVIDER_TEAM_WEBHOOKURL": SLACK}


def test_the_report_groups_objects_by_outcome_in_the_sources_order() -> None:
    imported = Imported("Test")
    one = imported.item("monitor", "One")
    imported.add(
        "monitors",
        {"key": "one", "name": "One", "type": "tcp", "host": "a.example", "port": 1},
        one,
    )
    gone = imported.item("monitor", "Gone")
    gone.skip("type 99 is not an Upwatch type")
    near = imported.item("monitor", "Near")
    near.approximate("interval 5 s raised to 10 s")
    imported.add(
        "monitors",
        {"key": "near", "name": "Near", "type": "heartbeat", "intervalSeconds": 10},
        near,
    )
    imported.text()
    assert imported.report.text().splitlines() == [
        "mapped (1):",
        "  monitor 'One' -> monitor one",
        "approximate (1):",
        "  monitor 'Near' -> monitor near: interval 5 s raised to 10 s",
        "skipped (1):",
        "  monitor 'Gone': type 99 is not an Upwatch type",
        "Imported from Test: 1 mapped, 1 approximate, 1 skipped; 0 secret(s) to set.",
    ]


def test_an_entry_the_api_would_refuse_is_skipped_with_its_reason() -> None:
    imported = Imported("Test")
    item = imported.item("monitor", "Fast")
    imported.add(
        "monitors", {"key": "fast", "name": "Fast", "type": "heartbeat", "intervalSeconds": 1}, item
    )
    page = imported.item("status page", "Status")
    imported.add(
        "statusPages",
        {"key": "status", "name": "Status", "slug": "status", "components": [{"monitor": "fast"}]},
        page,
    )
    document = yaml.safe_load(imported.text())
    assert "monitors" not in document
    assert document["statusPages"][0]["components"] == []
    assert imported.report.text().splitlines()[1:4] == [
        "  status page 'Status' -> status page status: 1 component(s) of skipped monitors left out",
        "skipped (1):",
        "  monitor 'Fast': Upwatch would refuse it: intervalSeconds: at least 10",
    ]


def test_a_file_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "upwatch.yaml"
    target.write_text("before\n")
    write("after\n", target)
    assert target.read_text() == "after\n"
    with pytest.raises(FileNotFoundError):
        write("never\n", tmp_path / "missing" / "upwatch.yaml")
    assert [p.name for p in tmp_path.iterdir()] == ["upwatch.yaml"]


def test_the_commands_choices_are_the_registered_sources() -> None:
    assert set(IMPORT_SOURCES) == set(SOURCES)


def test_a_source_that_reads_one_file_refuses_several(tmp_path: Path) -> None:
    one, two = tmp_path / "a.yaml", tmp_path / "b.yaml"
    one.write_text("endpoints: []\n")
    two.write_text("endpoints: []\n")
    with pytest.raises(SourceError, match="--from gatus reads one SOURCE"):
        SOURCES["gatus"].run([one, two])


def test_a_source_with_nothing_in_it_gives_an_empty_file() -> None:
    imported = Imported("Test")
    assert yaml.safe_load(imported.text()) == {"version": 1}
    assert (
        imported.report.text()
        == "Imported from Test: 0 mapped, 0 approximate, 0 skipped; 0 secret(s) to set.\n"
    )


def test_a_password_in_a_url_leaves_it_for_a_basic_authorization_value() -> None:
    url, basic = without_credentials("https://ops:s3cret@[2001:db8::1]:8443/health?x=1")
    assert url == "https://[2001:db8::1]:8443/health?x=1"
    assert basic == "Basic " + base64.b64encode(b"ops:s3cret").decode()
    assert without_credentials("https://example.com/") == ("https://example.com/", None)
