"""Importing Healthchecks's checks list (its API docs' example, and checks for the cases the
docs describe): heartbeats with period, grace, cron schedule and zone; integrations reported."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.importers.cli import upwatch_import
from upwatch.importers.healthchecks import read
from upwatch.importers.output import Imported
from upwatch.importers.source import SourceError

FIXTURES = Path(__file__).parent / "fixtures" / "healthchecks"
SOURCES = [FIXTURES / "checks.json", FIXTURES / "channels.json"]


@pytest.fixture(scope="module")
def imported() -> Imported:
    return read(SOURCES)


def test_checks_become_heartbeats_with_period_grace_schedule_and_zone(
    imported: Imported,
) -> None:
    monitors = yaml.safe_load(imported.text())["monitors"]
    assert monitors == [
        {
            "key": "filesystem-backup",
            "name": "Filesystem Backup",
            "type": "heartbeat",
            "intervalSeconds": 3600,
            "graceSeconds": 600,
        },
        {
            "key": "database-backup",
            "name": "Database Backup",
            "type": "heartbeat",
            "schedule": "15 5 * * *",
            "timezone": "UTC",
            "graceSeconds": 1200,
        },
        {
            "key": "monthly-report",
            "name": "Monthly report",
            "type": "heartbeat",
            "schedule": "0 9 1 * *",
            "timezone": "Europe/Riga",
            "graceSeconds": 86400,
            "isActive": False,
        },
    ]


def test_the_report_says_what_became_of_each_object(imported: Imported) -> None:
    imported.text()
    assert imported.report.text().splitlines() == [
        "approximate (3):",
        "  check 'Filesystem Backup' -> monitor filesystem-backup: tags, description, keywords "
        "not carried over; alerts every provider (in Healthchecks: Ops email (email), Team "
        "Slack (slack))",
        "  check 'Database Backup' -> monitor database-backup: tags, description not carried "
        "over; alerts every provider (in Healthchecks: Ops email (email), Team Slack (slack))",
        "  check 'Monthly report' -> monitor monthly-report: grace 172800 s shortened to a day",
        "skipped (4):",
        "  integration 'Ops email (email)': the API gives no address or token: add it as a "
        "provider in Upwatch",
        "  integration 'Team Slack (slack)': the API gives no address or token: add it as a "
        "provider in Upwatch",
        "  check 'Cleanup': schedule '*-*~1 12:00' is an OnCalendar expression: Upwatch reads cron",
        "  check 'Weekly sync': period 604800 s is longer than a day: give it a cron schedule in "
        "Upwatch",
        "Imported from Healthchecks: 0 mapped, 3 approximate, 4 skipped; 0 secret(s) to set.",
    ]


def test_without_the_channels_list_the_channel_ids_are_named(tmp_path: Path) -> None:
    imported = read([FIXTURES / "checks.json"])
    imported.text()
    assert "in Healthchecks: 1bdea468-03bf-47b8-ab27-29a9dd0e4b94" in imported.report.text()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "not valid JSON"),
        ('{"monitors": []}', "neither `checks` nor `channels`"),
        ('{"channels": []}', "no checks list"),
    ],
)
def test_bad_input_is_refused_naming_what_was_expected_and_nothing_written(
    tmp_path: Path, content: str, expected: str
) -> None:
    source = tmp_path / "checks.json"
    source.write_text(content)
    with pytest.raises(SourceError, match=expected):
        read([source])
    done = upwatch_import(tmp_path, "--from", "healthchecks", str(source), "-o", "out.yaml")
    assert done.returncode == 2
    assert "GET /api/v3/checks/" in done.stderr
    assert not (tmp_path / "out.yaml").exists()


def test_a_binary_file_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "kuma.db"
    source.write_bytes(b"SQLite format 3\x00\xff\xfe")
    with pytest.raises(SourceError, match="not a text file"):
        read([source])
