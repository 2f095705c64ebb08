"""Importing UptimeRobot's saved API v2 responses (getMonitors, getAlertContacts, getPSPs,
written by hand in the documented format): each type and field mapped or reported."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.importers.cli import upwatch_import
from upwatch.importers.output import Imported
from upwatch.importers.source import SourceError
from upwatch.importers.uptimerobot import read

FIXTURES = Path(__file__).parent / "fixtures" / "uptimerobot"
SECRETS = (
    "ur-header-secret",
    "ur-basic-secret",
    base64.b64encode(b"monitor:ur-basic-secret").decode(),
    "ur-slack-secret",
    "ur-webhook-secret",
    "0123456789abcdef0123456789abcdef",
    "ur-discord-secret",
)


@pytest.fixture(scope="module")
def imported() -> Imported:
    return read([FIXTURES])


@pytest.fixture(scope="module")
def document(imported: Imported) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(imported.text())
    return loaded


def by_key(document: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {entry["key"]: entry for entry in document[kind]}


def test_an_http_monitor_keeps_method_headers_statuses_interval_and_timeout(
    document: dict[str, Any],
) -> None:
    website = by_key(document, "monitors")["website"]
    assert website == {
        "key": "website",
        "name": "Website",
        "type": "http",
        "url": "https://www.example.com/",
        "method": "GET",
        "headers": {
            "Accept": "text/html",
            "X-Api-Key": {"env": "UPWATCH_IMPORT_MONITOR_WEBSITE_HEADER_X_API_KEY"},
        },
        "secretHeaders": ["X-Api-Key"],
        "expectedStatusCodes": [
            200,
            201,
            202,
            203,
            204,
            205,
            206,
            301,
            302,
            303,
            304,
            307,
            308,
            418,
        ],
        "intervalSeconds": 300,
        "timeoutSeconds": 30,
    }


def test_basic_auth_becomes_a_secret_authorization_header(
    imported: Imported, document: dict[str, Any]
) -> None:
    api = by_key(document, "monitors")["api-health"]
    name = "UPWATCH_IMPORT_MONITOR_API_HEALTH_HEADER_AUTHORIZATION"
    assert api["headers"] == {"Authorization": {"env": name}}
    expected = "Basic " + base64.b64encode(b"monitor:ur-basic-secret").decode()
    assert imported.secret_values()[name] == expected
    assert (api["method"], api["body"]) == ("POST", '{"probe": true}')


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("shop-keyword", {"keyword": "Add to cart"}),
        (
            "api-health",
            {
                "assertions": [
                    {"source": "body", "operator": "matches", "value": r"(?is)\A(?!.*Error)"}
                ]
            },
        ),
    ],
)
def test_keyword_rules_become_a_keyword_or_a_body_assertion(
    document: dict[str, Any], key: str, expected: dict[str, Any]
) -> None:
    monitor = by_key(document, "monitors")[key]
    assert {name: monitor.get(name) for name in expected} == expected


def test_ping_port_and_heartbeat_monitors(document: dict[str, Any]) -> None:
    monitors = by_key(document, "monitors")
    assert monitors["router"] == {
        "key": "router",
        "name": "Router",
        "type": "ping",
        "host": "203.0.113.10",
        "intervalSeconds": 60,
    }
    assert (monitors["mail-server"]["type"], monitors["mail-server"]["port"]) == ("tcp", 25)
    assert monitors["database-port"]["port"] == 5432
    assert monitors["nightly-backup"] == {
        "key": "nightly-backup",
        "name": "Nightly backup",
        "type": "heartbeat",
        "intervalSeconds": 86400,
    }
    assert monitors["shop-keyword"]["isActive"] is False


def test_alert_contacts_become_providers_where_the_channel_exists(
    document: dict[str, Any],
) -> None:
    providers = by_key(document, "providers")
    assert sorted(providers) == ["deploy-hook", "incidents", "ops-mail", "team-chat", "team-slack"]
    assert providers["ops-mail"]["config"] == {"to": ["ops@example.com"]}
    assert providers["team-chat"] == {
        "key": "team-chat",
        "type": "discord",
        "name": "Team chat",
        "config": {"webhookUrl": {"env": "UPWATCH_IMPORT_PROVIDER_TEAM_CHAT_WEBHOOKURL"}},
    }


def test_psps_become_status_pages_with_their_monitors(document: dict[str, Any]) -> None:
    pages = by_key(document, "statusPages")
    assert pages["example-status"]["components"] == [
        {"monitor": "website", "name": "Website"},
        {"monitor": "api-health", "name": "API health"},
    ]
    assert len(pages["everything"]["components"]) == 7  # monitors: 0 is every monitor


def test_the_report_says_what_became_of_each_object(imported: Imported) -> None:
    imported.text()
    assert imported.report.text().splitlines() == [
        "mapped (4):",
        "  alert contact 'Ops mail' -> provider ops-mail",
        "  alert contact 'Team Slack' -> provider team-slack",
        "  alert contact 'Team chat' -> provider team-chat",
        "  status page 'Everything' -> status page everything",
        "approximate (10):",
        "  alert contact 'Deploy hook' -> provider deploy-hook: Upwatch posts its own JSON "
        "payload, not UptimeRobot's fields",
        "  alert contact 'Incidents' -> provider incidents: not active in UptimeRobot: active here",
        "  monitor 'Website' -> monitor website: custom statuses: the usual 2xx and 3xx codes and "
        "404 down, 418 up; alerts every provider, not only its alert contacts",
        "  monitor 'API health' -> monitor api-health: alerts every provider, not only its alert "
        "contacts",
        "  monitor 'Shop keyword' -> monitor shop-keyword: alerts every provider, not only its "
        "alert contacts",
        "  monitor 'Router' -> monitor router: alerts every provider, not only its alert contacts",
        "  monitor 'Mail server' -> monitor mail-server: alerts every provider, not only its "
        "alert contacts",
        "  monitor 'Database port' -> monitor database-port: alerts every provider, not only its "
        "alert contacts",
        "  monitor 'Nightly backup' -> monitor nightly-backup: alerts every provider, not only "
        "its alert contacts",
        "  status page 'Example Status' -> status page example-status: monitors that were "
        "skipped left out; custom domain https://status.example.com not carried over",
        "skipped (3):",
        "  alert contact 'On-call phone': SMS through UptimeRobot's own sender: add an SMS "
        "provider with your Twilio account",
        "  alert contact 'My Telegram': Telegram through UptimeRobot's bot: add a Telegram "
        "provider with your own bot token",
        "  monitor 'Future type': type 9 has no Upwatch monitor type",
        "secrets (6): set these environment variables before applying:",
        "  UPWATCH_IMPORT_PROVIDER_TEAM_SLACK_WEBHOOKURL (alert contact 'Team Slack')",
        "  UPWATCH_IMPORT_PROVIDER_DEPLOY_HOOK_URL (alert contact 'Deploy hook')",
        "  UPWATCH_IMPORT_PROVIDER_INCIDENTS_ROUTINGKEY (alert contact 'Incidents')",
        "  UPWATCH_IMPORT_PROVIDER_TEAM_CHAT_WEBHOOKURL (alert contact 'Team chat')",
        "  UPWATCH_IMPORT_MONITOR_WEBSITE_HEADER_X_API_KEY (monitor 'Website')",
        "  UPWATCH_IMPORT_MONITOR_API_HEALTH_HEADER_AUTHORIZATION (monitor 'API health')",
        "Imported from UptimeRobot: 4 mapped, 10 approximate, 3 skipped; 6 secret(s) to set.",
    ]


def test_the_responses_may_be_given_as_files_or_merged_into_one(tmp_path: Path) -> None:
    merged: dict[str, Any] = {}
    for name in ("getMonitors", "getAlertContacts", "getPSPs"):
        merged.update(json.loads((FIXTURES / f"{name}.json").read_text()))
    (tmp_path / "all.json").write_text(json.dumps(merged))
    files = sorted(FIXTURES.glob("*.json"))
    assert read([tmp_path / "all.json"]).text() == read(files).text() == read([FIXTURES]).text()


def test_the_monitors_alone_import_without_providers_or_pages() -> None:
    document = yaml.safe_load(read([FIXTURES / "getMonitors.json"]).text())
    assert set(document) == {"version", "monitors"}


def test_the_command_writes_no_secret_anywhere(tmp_path: Path) -> None:
    done = upwatch_import(tmp_path, "--from", "uptimerobot", str(FIXTURES))
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["version"] == 1
    assert "Imported from UptimeRobot" in done.stderr
    for secret in SECRETS:
        assert secret not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON"),
        ('{"stat": "fail", "error": {"type": "invalid_parameter"}}', "a failed API call"),
        ('{"data": [], "nextLink": null}', "none of monitors, alert_contacts, psps"),
        ('{"alert_contacts": []}', "no getMonitors response"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_bad_input_is_refused_naming_what_was_expected_and_nothing_written(
    tmp_path: Path, content: str, expected: str
) -> None:
    source = tmp_path / "saved.json"
    source.write_text(content)
    with pytest.raises(SourceError, match=expected):
        read([source])
    done = upwatch_import(tmp_path, "--from", "uptimerobot", str(source), "-o", "out.yaml")
    assert done.returncode == 2
    assert "saved UptimeRobot API v2 responses" in done.stderr
    assert not (tmp_path / "out.yaml").exists()
