"""Healthchecks: the saved answer of its API's ``GET /api/v3/checks/`` (``{"checks": […]}``),
and optionally of ``GET /api/v3/channels/``. Each check becomes a heartbeat monitor with its
period, grace, cron schedule and time zone. Integrations cannot be carried over: the API
lists only their kind and name, never their address or token, so each is reported for the
person to add as a provider."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from upwatch.importers.output import Imported
from upwatch.importers.source import Source, SourceError, read_json

EXPECTS = (
    'the saved JSON of Healthchecks\'s GET /api/v3/checks/ ({"checks": [...]}), and of '
    "GET /api/v3/channels/ if you have it"
)
DAY: Final = 86_400
# Five cron fields or a nickname: what Upwatch's schedule reads (Healthchecks also takes
# systemd OnCalendar expressions).
_CRON = re.compile(r"^(@\w+|(\S+\s+){4}\S+)$")


def _lists(paths: Sequence[Path]) -> tuple[list[Any], list[Any]]:
    checks: list[Any] | None = None
    channels: list[Any] = []
    for path in paths:
        data = read_json(path, EXPECTS)
        if isinstance(data, dict) and isinstance(data.get("checks"), list):
            checks = (checks or []) + data["checks"]
        elif isinstance(data, dict) and isinstance(data.get("channels"), list):
            channels += data["channels"]
        else:
            raise SourceError(f"{path}: neither `checks` nor `channels` in it; expected {EXPECTS}")
    if checks is None:
        raise SourceError(f"no checks list among {', '.join(map(str, paths))}: {EXPECTS}")
    return checks, channels


def _check(imported: Imported, check: dict[str, Any], channels: dict[str, str]) -> None:
    name = str(check.get("name") or check.get("slug") or check.get("uuid") or "check")
    item = imported.item("check", name)
    if "update_url" not in check and "unique_key" in check:
        item.approximate("read with a read-only key: its integrations are not listed")
    key = imported.key("monitors", str(check.get("slug") or name))
    entry: dict[str, Any] = {"key": key, "name": name[:100], "type": "heartbeat"}
    schedule = str(check.get("schedule") or "").strip()
    if schedule:
        if not _CRON.match(schedule):
            item.skip(f"schedule {schedule!r} is an OnCalendar expression: Upwatch reads cron")
            return
        entry["schedule"] = schedule
        entry["timezone"] = str(check.get("tz") or "UTC")
    else:
        period = int(check.get("timeout") or DAY)
        if period > DAY:
            item.skip(f"period {period} s is longer than a day: give it a cron schedule in Upwatch")
            return
        entry["intervalSeconds"] = max(10, period)
    grace = int(check.get("grace") or 3600)
    if grace > DAY:
        item.approximate(f"grace {grace} s shortened to a day")
    entry["graceSeconds"] = min(grace, DAY)
    if check.get("status") == "paused":
        entry["isActive"] = False
    notes = [
        ("tags", check.get("tags")),
        ("description", check.get("desc")),
        (
            "keywords",
            "".join(str(check.get(k) or "") for k in ("start_kw", "success_kw", "failure_kw")),
        ),
        ("allowed methods", check.get("methods")),
    ]
    left = [label for label, value in notes if value]
    if left:
        item.approximate(f"{', '.join(left)} not carried over")
    named = [c.strip() for c in str(check.get("channels") or "").split(",") if c.strip()]
    if named:
        shown = ", ".join(channels.get(c, c) for c in named)
        item.approximate(f"alerts every provider (in Healthchecks: {shown})")
    imported.add("monitors", entry, item)


def read(paths: Sequence[Path]) -> Imported:
    checks, channels = _lists(paths)
    imported = Imported("Healthchecks")
    names: dict[str, str] = {}
    for channel in channels:
        label = f"{channel.get('name') or channel.get('kind')} ({channel.get('kind')})"
        names[str(channel.get("id"))] = label
        imported.item("integration", label).skip(
            "the API gives no address or token: add it as a provider in Upwatch"
        )
    for check in checks:
        if not isinstance(check, dict):
            raise SourceError(f"a check is not an object; expected {EXPECTS}")
        _check(imported, check, names)
    return imported


SOURCE = Source(name="healthchecks", label="Healthchecks", expects=EXPECTS, read=read, many=True)
