"""Importing Gatus's config.yaml (a fixture made of its README's examples): each endpoint,
condition, provider and window mapped or reported, and its report line by line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.importers.cli import upwatch_import
from upwatch.importers.gatus import read, seconds
from upwatch.importers.output import Imported
from upwatch.importers.registry import SOURCES
from upwatch.importers.source import SourceError

FIXTURE = Path(__file__).parent / "fixtures" / "gatus.yaml"
SECRETS = (
    "gatus-slack-secret",
    "ABC-DEF1234ghIkl",
    "0123456789abcdef0123456789abcdef",
    "custom-secret",
    "back-end-token-secret",
    "hunter2",
)


@pytest.fixture(scope="module")
def imported() -> Imported:
    return read([FIXTURE])


@pytest.fixture(scope="module")
def document(imported: Imported) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(imported.text())
    return loaded


def by_key(document: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {entry["key"]: entry for entry in document[kind]}


def test_go_durations_are_read_as_seconds() -> None:
    assert seconds("5m") == 300
    assert seconds("1h30m") == 5400
    assert seconds("250ms") == 0.25
    assert seconds("soon") is None


def test_http_conditions_become_status_codes_and_assertions(document: dict[str, Any]) -> None:
    monitors = by_key(document, "monitors")
    assert monitors["website"] == {
        "key": "website",
        "name": "website",
        "type": "http",
        "url": "https://twin.sh/health",
        "intervalSeconds": 300,
        "method": "GET",
        "expectedStatusCodes": [200],
        "assertions": [
            {"source": "json", "operator": "equals", "value": "UP", "path": "$.status"},
            {"source": "responseTime", "operator": "lessThan", "value": 300},
        ],
        "retries": 2,
        "successThreshold": 2,
    }
    back_end = monitors["core-back-end"]
    assert back_end["expectedStatusCodes"] == [200, 429]
    assert back_end["certificateWarningDays"] == [2]
    assert back_end["headers"] == {
        "Authorization": {"env": "UPWATCH_IMPORT_MONITOR_CORE_BACK_END_HEADER_AUTHORIZATION"},
        "Accept": "application/json",
    }
    assert back_end["assertions"] == [
        {"source": "json", "operator": "notExists", "path": "$.errors"},
        {"source": "json", "operator": "matches", "value": r"(?s:john.*)\Z", "path": "$.name"},
    ]


def test_other_schemes_become_their_monitor_types(document: dict[str, Any]) -> None:
    monitors = by_key(document, "monitors")
    assert monitors["redis"] == {
        "key": "redis",
        "name": "redis",
        "type": "tcp",
        "host": "127.0.0.1",
        "port": 6379,
        "intervalSeconds": 30,
    }
    assert monitors["ping-example"]["type"] == "ping"
    assert monitors["ping-example"]["host"] == "example.com"
    dns = monitors["example-dns-query"]
    assert (dns["type"], dns["host"], dns["recordType"], dns["expectedValue"]) == (
        "dns",
        "example.com",
        "A",
        "93.184.215.14",
    )
    grpc = monitors["my-grpc"]
    assert (grpc["type"], grpc["port"], grpc["tls"], grpc["timeoutSeconds"]) == (
        "grpc",
        50051,
        False,
        5.0,
    )
    assert "ssh-example-password" not in monitors


def test_providers_keep_their_settings_and_their_secrets_as_env_references(
    document: dict[str, Any],
) -> None:
    providers = by_key(document, "providers")
    assert providers["telegram"]["config"] == {
        "botToken": {"env": "UPWATCH_IMPORT_PROVIDER_TELEGRAM_BOTTOKEN"},
        "chatId": "0123456789",
    }
    assert providers["email"]["config"] == {
        "to": ["recipient1@example.com", "recipient2@example.com"]
    }
    assert providers["custom"]["type"] == "webhook"
    assert providers["pagerduty"]["config"] == {
        "routingKey": {"env": "UPWATCH_IMPORT_PROVIDER_PAGERDUTY_ROUTINGKEY"}
    }


def test_maintenance_repeats_by_the_wall_clock_of_its_zone(document: dict[str, Any]) -> None:
    windows = by_key(document, "maintenance")
    assert windows["maintenance"] == {
        "key": "maintenance",
        "title": "Maintenance",
        "startsAt": "2026-01-05T22:00:00Z",
        "endsAt": "2026-01-05T23:00:00Z",
        "rrule": "FREQ=WEEKLY;BYDAY=MO,TH",
        "timezone": "Europe/Amsterdam",
    }
    assert windows["back-end-maintenance-1"]["monitors"] == ["core-back-end"]
    assert windows["back-end-maintenance-1"]["rrule"] == "FREQ=DAILY"


def test_the_dashboard_becomes_a_status_page_with_the_groups(document: dict[str, Any]) -> None:
    page = document["statusPages"][0]
    assert page["slug"] == "gatus"
    assert page["components"][:2] == [
        {"monitor": "website", "name": "website"},
        {"monitor": "core-back-end", "name": "back-end", "group": "core"},
    ]


def test_the_report_says_what_became_of_each_object(imported: Imported) -> None:
    imported.text()
    assert imported.report.text().splitlines() == [
        "mapped (4):",
        "  alerting provider 'slack' -> provider slack",
        "  alerting provider 'telegram' -> provider telegram",
        "  maintenance window 'back-end maintenance 1' -> maintenance window "
        "back-end-maintenance-1",
        "  maintenance 'every endpoint' -> maintenance window maintenance",
        "approximate (10):",
        "  alerting provider 'pagerduty' -> provider pagerduty: group overrides left out: one "
        "provider for every monitor",
        "  alerting provider 'email' -> provider email: sent by Upwatch's own mail server, not "
        "the configured one",
        "  alerting provider 'custom' -> provider custom: Upwatch sends its own JSON payload: "
        "method and body left out",
        "  endpoint 'website' -> monitor website: alerts pagerduty, slack: Upwatch alerts every "
        "provider (also custom, email, telegram)",
        "  endpoint 'core/back-end' -> monitor core-back-end: certificate expiry 48h: a warning "
        "incident under 2 day(s) left, not a failed check; condition 'len([BODY].data) < 5' "
        "has no Upwatch equivalent, left out; alerts telegram: Upwatch alerts every provider "
        "(also custom, email, pagerduty, slack)",
        "  endpoint 'redis' -> monitor redis: no alerts in Gatus: Upwatch alerts every provider",
        "  endpoint 'ping-example' -> monitor ping-example: no alerts in Gatus: Upwatch alerts "
        "every provider",
        "  endpoint 'example-dns-query' -> monitor example-dns-query: asked through Upwatch's "
        "resolver, not the server 8.8.8.8; no alerts in Gatus: Upwatch alerts every provider",
        "  endpoint 'my-grpc' -> monitor my-grpc: condition '[BODY].status == SERVING' has no "
        "Upwatch equivalent, left out; no alerts in Gatus: Upwatch alerts every provider",
        "  dashboard 'Health Dashboard | Gatus' -> status page gatus: a status page of every "
        "endpoint, grouped as in Gatus",
        "skipped (2):",
        "  alerting provider 'signal': no Upwatch channel of this kind",
        "  endpoint 'ssh-example-password': ssh:// endpoints have no Upwatch monitor type",
        "secrets (5): set these environment variables before applying:",
        "  UPWATCH_IMPORT_PROVIDER_SLACK_WEBHOOKURL (alerting provider 'slack')",
        "  UPWATCH_IMPORT_PROVIDER_TELEGRAM_BOTTOKEN (alerting provider 'telegram')",
        "  UPWATCH_IMPORT_PROVIDER_PAGERDUTY_ROUTINGKEY (alerting provider 'pagerduty')",
        "  UPWATCH_IMPORT_PROVIDER_CUSTOM_URL (alerting provider 'custom')",
        "  UPWATCH_IMPORT_MONITOR_CORE_BACK_END_HEADER_AUTHORIZATION (endpoint 'core/back-end')",
        "Imported from Gatus: 4 mapped, 10 approximate, 2 skipped; 5 secret(s) to set.",
    ]


def test_the_command_writes_the_file_and_no_secret_anywhere(tmp_path: Path) -> None:
    done = upwatch_import(tmp_path, "--from", "gatus", str(FIXTURE), "-o", "upwatch.yaml")
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "upwatch.yaml").read_text()
    assert yaml.safe_load(written)["version"] == 1
    for secret in SECRETS:
        assert secret not in written + done.stdout + done.stderr
    assert "Written to upwatch.yaml" in done.stdout


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("endpoints: [\n", "not valid YAML"),
        ("monitors: []\n", "no `endpoints` list"),
        ('{"checks": []}', "no `endpoints` list"),
    ],
)
def test_a_file_of_another_kind_is_refused_and_nothing_written(
    tmp_path: Path, text: str, expected: str
) -> None:
    source = tmp_path / "config.yaml"
    source.write_text(text)
    done = upwatch_import(tmp_path, "--from", "gatus", str(source), "-o", "upwatch.yaml")
    assert done.returncode == 2
    assert expected in done.stderr
    assert "expected Gatus's config.yaml" in done.stderr
    assert "nothing was written" in done.stderr
    assert not (tmp_path / "upwatch.yaml").exists()
    assert done.stdout == ""


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        SOURCES["gatus"].run([tmp_path / "absent.yaml"])
