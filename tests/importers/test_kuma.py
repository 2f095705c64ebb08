"""Importing from Uptime Kuma, from data Kuma made itself: ``fixtures/kuma-2.5.3.db`` was
written by a real Kuma 2.5.3 driven over its Socket.IO API (``fixtures/make_kuma_fixture.py``
says how). The import is checked line by line, applied to a live Upwatch and compared monitor
by monitor, each monitor checked against the loopback target its Kuma monitor pointed at.
``fixtures/kuma-1.23.16.db`` was made the same way by a real Kuma 1.23.16. The 1.x JSON backup
is written by hand after 1.23's export code (Kuma 2.x has no backups). Input of the wrong kind
is refused with what was expected, and nothing is written."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.factories import bearer
from tests.importers.fixtures.make_kuma_fixture import SECRETS, TARGET_PORT, Target
from tests.live_server import LiveServer, clean_env, run_cli
from upwatch.importers import kuma
from upwatch.importers.source import SourceError

FIXTURES = Path(__file__).parent / "fixtures"
DATABASE = FIXTURES / "kuma-2.5.3.db"
DATABASE_1X = FIXTURES / "kuma-1.23.16.db"
BACKUP = FIXTURES / "kuma-1.23-backup.json"
PASSWORD = "correct horse battery staple"


def imported_lines(path: Path) -> list[str]:
    return kuma.read([path]).report.text().splitlines()


def test_the_database_kuma_made_is_reported_object_by_object() -> None:
    imported = kuma.read([DATABASE])
    imported.text()  # the file is made: entries the API would refuse are reported too
    assert imported.report.text().splitlines() == [
        "mapped (3):",
        "  monitor 'No error page' -> monitor no-error-page",
        "  monitor 'Loopback ping' -> monitor loopback-ping",
        "  maintenance 'Database upgrade' -> maintenance window database-upgrade",
        "approximate (18):",
        "  notification 'Ops webhook' -> provider ops-webhook: Upwatch alerts it for every "
        "monitor (Kuma: 1 of 14)",
        "  notification 'Team Slack' -> provider team-slack: posted to the webhook's own channel "
        "(Kuma's override left out); Upwatch alerts it for every monitor (Kuma: 1 of 14)",
        "  notification 'Discord alerts' -> provider discord-alerts: Upwatch alerts it for every "
        "monitor (Kuma: 0 of 14)",
        "  notification 'Telegram on-call' -> provider telegram-on-call: Upwatch alerts it for "
        "every monitor (Kuma: 0 of 14)",
        "  notification 'Ops mail' -> provider ops-mail: sent through Upwatch's own mail server: "
        "Kuma's SMTP server, login and password are not carried over; Upwatch alerts it for "
        "every monitor (Kuma: 1 of 14)",
        "  notification 'PagerDuty' -> provider pagerduty: Upwatch alerts it for every monitor "
        "(Kuma: 1 of 14)",
        "  monitor 'Website' -> monitor website: retries are checked every 60 s (Kuma retried "
        "every 30 s); tags production left out (Upwatch monitors have no tags)",
        "  monitor 'API health' -> monitor api-health: tags production, team=payments left out "
        "(Upwatch monitors have no tags)",
        "  monitor 'API version' -> monitor api-version: retries are checked every 120 s (Kuma "
        "retried every 60 s)",
        "  monitor 'Admin area' -> monitor admin-area: accepted status codes 200-299, 301 "
        "checked as 200-301; retries are checked every 300 s (Kuma retried every 60 s)",
        "  monitor 'Shop port' -> monitor shop-port: retries are checked every 45 s (Kuma "
        "retried every 60 s)",
        "  monitor 'Shop DNS' -> monitor shop-dns: resolved by Upwatch's resolver, not "
        "127.0.0.1; retries are checked every 300 s (Kuma retried every 60 s)",
        "  monitor 'Nightly backup' -> monitor nightly-backup: the job must now report to the "
        "monitor's Upwatch heartbeat URL, not Kuma's push URL",
        "  monitor 'Orders database' -> monitor orders-database: retries are checked every "
        "120 s (Kuma retried every 60 s)",
        "  monitor 'Staging' -> monitor staging: retries are checked every 600 s (Kuma retried "
        "every 60 s)",
        "  maintenance 'Sunday deploys' -> maintenance window sunday-deploys: its description "
        "left out",
        "  maintenance 'Nightly cron window' -> maintenance window nightly-cron-window: it names "
        "no monitor: it covers the whole project",
        "  status page 'Shop status' -> status page shop: Kuma's automatic theme became the "
        "light one; its footer text left out; 1 component(s) of skipped monitors left out",
        "skipped (5):",
        "  notification 'Phone push': Upwatch has no channel for Kuma's pushbullet notifications",
        "  monitor 'Backend': a group: Upwatch has no monitor groups (its monitors were imported "
        "on their own)",
        "  monitor 'Old site gone': upside-down mode (up when the target fails) has no Upwatch "
        "equivalent",
        "  monitor 'Web container': Docker containers are not an Upwatch monitor type",
        "  monitor 'Game server': game servers are not an Upwatch monitor type",
        "secrets (9): set these environment variables before applying:",
        "  UPWATCH_IMPORT_PROVIDER_OPS_WEBHOOK_URL (notification 'Ops webhook')",
        "  UPWATCH_IMPORT_PROVIDER_OPS_WEBHOOK_HEADER_AUTHORIZATION (notification 'Ops webhook')",
        "  UPWATCH_IMPORT_PROVIDER_TEAM_SLACK_WEBHOOKURL (notification 'Team Slack')",
        "  UPWATCH_IMPORT_PROVIDER_DISCORD_ALERTS_WEBHOOKURL (notification 'Discord alerts')",
        "  UPWATCH_IMPORT_PROVIDER_TELEGRAM_ON_CALL_BOTTOKEN (notification 'Telegram on-call')",
        "  UPWATCH_IMPORT_PROVIDER_PAGERDUTY_ROUTINGKEY (notification 'PagerDuty')",
        "  UPWATCH_IMPORT_MONITOR_API_HEALTH_X_API_KEY (monitor 'API health')",
        "  UPWATCH_IMPORT_MONITOR_ADMIN_AREA_AUTHORIZATION (monitor 'Admin area')",
        "  UPWATCH_IMPORT_MONITOR_ORDERS_DATABASE_URL (monitor 'Orders database')",
        "Imported from Uptime Kuma (Kuma 2.x database): 3 mapped, 18 approximate, 5 skipped; "
        "9 secret(s) to set.",
    ]


def test_no_secret_of_the_database_reaches_the_file_or_the_report() -> None:
    imported = kuma.read([DATABASE])
    written = imported.text() + imported.report.text()
    for value in SECRETS.values():
        assert value not in written
    assert "Basic " not in written
    values = imported.secret_values()
    assert values["UPWATCH_IMPORT_PROVIDER_TEAM_SLACK_WEBHOOKURL"] == SECRETS["slack"]
    assert values["UPWATCH_IMPORT_MONITOR_ORDERS_DATABASE_URL"] == (
        f"postgresql://kuma:{SECRETS['postgres_password']}@127.0.0.1:5432/orders"
    )


def test_a_1x_backup_is_reported_object_by_object() -> None:
    imported = kuma.read([BACKUP])
    document = yaml.safe_load(imported.text())
    assert imported.report.text().splitlines() == [
        "approximate (5):",
        "  notification 'Team Slack' -> provider team-slack: Upwatch alerts it for every "
        "monitor (Kuma: 2 of 4)",
        "  notification 'Gotify' -> provider gotify: Upwatch alerts it for every monitor "
        "(Kuma: 0 of 4)",
        "  monitor 'Homepage' -> monitor homepage: tags web left out (Upwatch monitors have no "
        "tags)",
        "  monitor 'Status API' -> monitor status-api: its description left out",
        "  monitor 'Cron job' -> monitor cron-job: the job must now report to the monitor's "
        "Upwatch heartbeat URL, not Kuma's push URL",
        "skipped (1):",
        "  monitor 'MQTT broker': Kuma's mqtt monitors are not an Upwatch monitor type",
        "secrets (3): set these environment variables before applying:",
        "  UPWATCH_IMPORT_PROVIDER_TEAM_SLACK_WEBHOOKURL (notification 'Team Slack')",
        "  UPWATCH_IMPORT_PROVIDER_GOTIFY_APPTOKEN (notification 'Gotify')",
        "  UPWATCH_IMPORT_MONITOR_STATUS_API_AUTHORIZATION (monitor 'Status API')",
        "Imported from Uptime Kuma (Kuma 1.23.16 backup): 0 mapped, 5 approximate, 1 skipped; "
        "3 secret(s) to set.",
    ]
    api = next(m for m in document["monitors"] if m["key"] == "status-api")
    assert api["expectedStatusCodes"] == [200]
    assert api["assertions"] == [
        {"source": "json", "path": "$.status", "operator": "equals", "value": "ok"}
    ]
    assert api["headers"] == {
        "Authorization": {"env": "UPWATCH_IMPORT_MONITOR_STATUS_API_AUTHORIZATION"}
    }


def test_the_database_kuma_1x_made_imports_like_the_2x_one() -> None:
    # The same script filled a real Kuma 1.23.16: the same objects, reported alike (1.x has
    # no ping count, so the ping monitor keeps Upwatch's default).
    older = kuma.read([DATABASE_1X])
    newer = kuma.read([DATABASE])
    older_document, newer_document = yaml.safe_load(older.text()), yaml.safe_load(newer.text())
    del newer_document["monitors"][6]["packetCount"]
    assert older_document == newer_document
    lines = older.report.text().splitlines()
    assert lines[:-1] == newer.report.text().splitlines()[:-1]
    assert lines[-1] == (
        "Imported from Uptime Kuma (Kuma 1.x database): 3 mapped, 18 approximate, 5 skipped; "
        "9 secret(s) to set."
    )


# ---- applied to a live Upwatch -------------------------------------------------------------


@pytest.fixture
def target() -> Iterator[str]:
    """The loopback server the fixture's monitors point at, on the port they name."""
    server = ThreadingHTTPServer(("127.0.0.1", TARGET_PORT), Target)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{TARGET_PORT}"
    server.shutdown()
    server.server_close()


class Live:
    """A live self-hosted Upwatch (Kuma's users host their own: no plan limits), a project on
    it and a write API key of that project."""

    def __init__(self, tmp: Path) -> None:
        env = clean_env(
            UPWATCH_DATABASE_URL=f"sqlite+aiosqlite:///{tmp / 'upwatch.db'}",
            UPWATCH_ALLOW_PRIVATE_TARGETS="true",
            UPWATCH_EDITION="selfhosted",
        )
        self.tmp = tmp
        self.server = LiveServer(tmp, env).start()
        self.api = httpx.Client(base_url=self.server.url, timeout=30)
        signup = self.api.post(
            "/auth/signup", json={"email": "a@example.com", "password": PASSWORD}
        )
        person = bearer(signup, 201)
        project = self.api.post("/projects", headers=person, json={"name": "Shop"})
        self.project_id = project.json()["id"]
        key = self.api.post(
            f"/projects/{self.project_id}/api-keys",
            headers=person,
            json={"name": "CI", "scope": "write"},
        )
        self.headers = {"Authorization": f"Bearer {key.json()['key']}"}
        self.env = clean_env(UPWATCH_API_URL=self.server.url, UPWATCH_API_KEY=key.json()["key"])

    def upwatch(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return run_cli(self.tmp, {**self.env, **env}, *args)

    def listed(self, path: str) -> list[dict[str, Any]]:
        found = self.api.get(path, headers=self.headers, params={"projectId": self.project_id})
        assert found.status_code == 200, found.text
        return list(found.json())


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    made = Live(tmp_path)
    yield made
    made.api.close()
    made.server.stop()


# What each imported monitor must be on the service: type, target and rules.
EXPECTED: dict[str, dict[str, Any]] = {
    "website": {"type": "http", "url": "http://127.0.0.1:47913/", "intervalSeconds": 60},
    "api-health": {
        "type": "http",
        "url": "http://127.0.0.1:47913/health",
        "keyword": '"ok"',
        "intervalSeconds": 30,
        "retries": 0,
        "timeoutSeconds": 10.0,
        "secretHeaders": ["X-Api-Key"],
    },
    "api-version": {"type": "http", "url": "http://127.0.0.1:47913/health", "retries": 1},
    "admin-area": {"type": "http", "method": "POST", "body": '{"ping": true}', "retries": 3},
    "no-error-page": {"type": "http", "keyword": None, "intervalSeconds": 60},
    "shop-port": {"type": "tcp", "host": "127.0.0.1", "port": TARGET_PORT, "intervalSeconds": 45},
    "loopback-ping": {"type": "ping", "host": "127.0.0.1", "packetCount": 3},
    "shop-dns": {"type": "dns", "host": "localhost", "recordType": "A", "intervalSeconds": 300},
    "nightly-backup": {"type": "heartbeat", "intervalSeconds": 86_400, "retries": 0},
    "orders-database": {"type": "postgres", "intervalSeconds": 120},
    "staging": {"type": "http", "isActive": False, "intervalSeconds": 600},
}
STATUS_RULES = [
    {"source": "statusCode", "operator": "greaterThanOrEqual", "value": 200},
    {"source": "statusCode", "operator": "lessThanOrEqual", "value": 299},
]
# Monitors whose loopback target answers as Kuma's monitor expected: up when checked now.
UP = {"website", "api-health", "api-version", "admin-area", "no-error-page", "shop-port"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def test_the_import_applies_to_a_live_upwatch_monitor_by_monitor_and_checks(
    live: Live, target: str, tmp_path: Path
) -> None:
    output = tmp_path / "kuma.yaml"
    done = run_cli(tmp_path, live.env, "import", "--from", "kuma", str(DATABASE), "-o", str(output))
    assert done.returncode == 0, done.stderr
    secrets = kuma.read([DATABASE]).secret_values()
    applied = live.upwatch("apply", "-f", str(output), **secrets)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "Plan: 21 to create, 0 to update" in applied.stdout

    monitors = {m["key"]: {_camel(k): v for k, v in m.items()} for m in live.listed("/monitors")}
    assert set(monitors) == set(EXPECTED)
    for key, fields in EXPECTED.items():
        assert {name: monitors[key].get(name) for name in fields} == fields, key
    assert monitors["website"]["assertions"] == STATUS_RULES
    assert monitors["api-version"]["assertions"] == [
        *STATUS_RULES,
        {"source": "json", "path": "$.version", "operator": "equals", "value": "1.2.3"},
    ]
    assert monitors["no-error-page"]["assertions"] == [
        *STATUS_RULES,
        {"source": "body", "operator": "notContains", "value": "Internal Server Error"},
    ]
    assert monitors["api-health"]["secretRefs"]["headers.X-Api-Key"]["env"] == (
        "UPWATCH_IMPORT_MONITOR_API_HEALTH_X_API_KEY"
    )

    # Every active monitor that reaches out checks now, its result stored; those whose target
    # is the loopback server are up (the basic auth and headers were sent as Kuma sent them).
    for key, monitor in monitors.items():
        if key in ("nightly-backup", "staging"):
            continue  # a heartbeat waits for its job; a paused monitor does not check
        checked = live.api.post(f"/monitors/{monitor['id']}/check", headers=live.headers)
        assert checked.status_code == 200, (key, checked.text)
        result = checked.json()
        if key in UP:
            assert result["status"] == "up", (key, result)
        stored = live.api.get(f"/monitors/{monitor['id']}/checks", headers=live.headers)
        assert stored.json(), key

    # The status page: Kuma's monitor groups as component groups, in Kuma's order (the
    # Docker monitor left out).
    ids = {monitor["id"]: key for key, monitor in monitors.items()}
    [listed_page] = live.listed("/status-pages")
    page = live.api.get(f"/status-pages/{listed_page['id']}", headers=live.headers).json()
    page = {_camel(k): v for k, v in page.items()}
    components = {c["id"]: ids[c.get("monitorId", c.get("monitor_id"))] for c in page["components"]}
    groups = [{_camel(k): v for k, v in g.items()} for g in page["groups"]]
    assert [(g["name"], [components[c] for c in g["componentIds"]]) for g in groups] == [
        ("Services", ["website", "api-health", "api-version"]),
        ("Infrastructure", ["shop-port", "orders-database"]),
    ]
    # The maintenance windows: Kuma's schedules as RRULEs in their zones, on their monitors.
    windows = {
        w["key"]: {_camel(k): v for k, v in w.items()} for w in live.listed("/maintenance-windows")
    }
    assert {
        key: (w["rrule"], w["timezone"], sorted(ids[m] for m in w["monitorIds"] or []))
        for key, w in windows.items()
    } == {
        "sunday-deploys": ("FREQ=WEEKLY;BYDAY=SU", "Europe/Paris", ["api-health", "website"]),
        "database-upgrade": (None, "UTC", ["orders-database", "shop-port"]),
        "nightly-cron-window": ("FREQ=DAILY", "UTC", []),
    }
    providers = {p["key"]: p["type"] for p in live.listed("/notification-providers/user")}
    assert providers == {
        "ops-webhook": "webhook",
        "team-slack": "slack",
        "discord-alerts": "discord",
        "telegram-on-call": "telegram",
        "ops-mail": "email",
        "pagerduty": "pagerduty",
    }
    # Round trip: the import applied again, and the project exported and applied, change
    # nothing.
    unchanged = "0 to create, 0 to update, 0 to replace, 0 to delete, 21 unchanged"
    again = live.upwatch("apply", "-f", str(output), **secrets)
    assert unchanged in again.stdout, again.stdout + again.stderr
    exported = tmp_path / "exported.yaml"
    done = live.upwatch("export", "-o", str(exported))
    assert done.returncode == 0, done.stderr
    after_export = live.upwatch("apply", "-f", str(exported), **secrets)
    assert unchanged in after_export.stdout, after_export.stdout + after_export.stderr


# ---- bad input -------------------------------------------------------------------------------


def _refused(tmp_path: Path, source: Path) -> str:
    output = tmp_path / "out.yaml"
    done = run_cli(
        tmp_path, clean_env(), "import", "--from", "kuma", str(source), "-o", str(output)
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert not output.exists()
    assert "nothing was written" in done.stderr
    return done.stderr


def test_a_corrupt_database_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    corrupt = tmp_path / "kuma.db"
    corrupt.write_bytes(DATABASE.read_bytes()[:4096] + b"\x00garbage" * 512)
    assert "not a readable SQLite database" in _refused(tmp_path, corrupt)


def test_another_applications_database_is_refused_naming_what_was_expected(
    tmp_path: Path,
) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY)")
    message = _refused(tmp_path, other)
    assert "a SQLite database without Kuma's tables" in message
    assert kuma.EXPECTS in message


def test_a_newer_2x_schema_is_refused_naming_the_versions_supported(tmp_path: Path) -> None:
    newer = tmp_path / "kuma.db"
    shutil.copy(DATABASE, newer)
    with sqlite3.connect(newer) as db:
        db.execute(
            "INSERT INTO knex_migrations (name, batch, migration_time) "
            "VALUES ('2027-01-01-0000-something-new.js', 9, 0)"
        )
    message = _refused(tmp_path, newer)
    assert "newer schema" in message
    assert "2027-01-01-0000-something-new.js" in message
    assert kuma.SUPPORTED in message


def test_a_newer_1x_database_version_is_refused(tmp_path: Path) -> None:
    newer = tmp_path / "kuma.db"
    shutil.copy(DATABASE_1X, newer)
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE setting SET value = '11' WHERE key = 'database_version'")
    assert "database version 11" in _refused(tmp_path, newer)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"monitors": []}', "JSON without Kuma's backup fields"),
        ('{"version": "2.0.0", "notificationList": [], "monitorList": []}', "only 1.x made"),
        ("version: 1\nmonitors: []\n", "not valid JSON"),
        ("\x89PNG\r\n", "not valid JSON"),
    ],
)
def test_a_file_of_another_kind_is_refused(tmp_path: Path, content: str, expected: str) -> None:
    source = tmp_path / "source"
    source.write_text(content)
    assert expected in _refused(tmp_path, source)


def test_reading_the_database_does_not_change_it(tmp_path: Path) -> None:
    copy = tmp_path / "kuma.db"
    shutil.copy(DATABASE, copy)
    with sqlite3.connect(copy) as db:  # as Kuma keeps it
        db.execute("PRAGMA journal_mode=WAL")
    db.close()
    before = copy.read_bytes()
    copy.chmod(0o444)  # read-only: the importer opens it with mode=ro
    kuma.read([copy])
    assert copy.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["kuma.db"]  # no -wal or -shm left behind


def test_a_source_error_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=str(tmp_path)):
        kuma.read([tmp_path])
