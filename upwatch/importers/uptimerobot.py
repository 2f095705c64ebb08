"""UptimeRobot: saved responses of its API v2: ``getMonitors`` (with ``alert_contacts=1``,
``custom_http_headers=1`` and ``custom_http_statuses=1`` for everything), and optionally
``getAlertContacts`` and ``getPSPs``. Give them as several files, one directory of them, or one
file holding their keys together; each is known by its content (``monitors``,
``alert_contacts``, ``psps``)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from upwatch.importers.headers import monitor_headers, without_credentials
from upwatch.importers.output import Imported
from upwatch.importers.report import Item
from upwatch.importers.source import Source, SourceError, read_json

EXPECTS = (
    "saved UptimeRobot API v2 responses: getMonitors, and getAlertContacts and getPSPs if you "
    "have them (JSON files, or a directory of them)"
)
LISTS: Final = ("monitors", "alert_contacts", "psps")
METHODS: Final = {1: "HEAD", 2: "GET", 3: "POST", 4: "PUT", 5: "PATCH", 6: "DELETE", 7: "OPTIONS"}
PORTS: Final = {1: 80, 2: 443, 3: 21, 4: 25, 5: 110, 6: 143}
# What Upwatch counts as up without a list (200-399), written out when a list is needed.
USUAL_CODES: Final = (200, 201, 202, 203, 204, 205, 206, 301, 302, 303, 304, 307, 308)
# Alert contact types with an Upwatch channel: type → (channel, the config field of `value`).
CHANNELS: Final = {
    2: ("email", "to"),
    5: ("webhook", "url"),
    11: ("slack", "webhookUrl"),
    16: ("pagerduty", "routingKey"),
    17: ("opsgenie", "apiKey"),
    20: ("teams", "webhookUrl"),
    21: ("googlechat", "webhookUrl"),
    23: ("discord", "webhookUrl"),
}
WITHOUT_CHANNEL: Final = {
    1: "SMS through UptimeRobot's own sender: add an SMS provider with your Twilio account",
    3: "Twitter has no Upwatch channel",
    6: "Pushbullet has no Upwatch channel",
    7: "Zapier: give Upwatch a webhook provider with the Zap's URL",
    8: "SMS through UptimeRobot's own sender: add an SMS provider with your Twilio account",
    9: "Pushover through UptimeRobot's application: add a Pushover provider with your own "
    "application token",
    14: "voice calls have no Upwatch channel",
    15: "Splunk has no Upwatch channel",
    18: "Telegram through UptimeRobot's bot: add a Telegram provider with your own bot token",
}


def _responses(paths: Sequence[Path]) -> dict[str, list[Any]]:
    files: list[Path] = []
    for path in paths:
        files += sorted(path.glob("*.json")) if path.is_dir() else [path]
    found: dict[str, list[Any]] = {}
    for path in files:
        data = read_json(path, EXPECTS)
        if not isinstance(data, dict):
            raise SourceError(f"{path}: not a JSON object; expected {EXPECTS}")
        if data.get("stat") == "fail":
            raise SourceError(
                f"{path}: a failed API call ({data.get('error')}); expected {EXPECTS}"
            )
        lists = [name for name in LISTS if name in data]
        if not lists:
            raise SourceError(f"{path}: none of {', '.join(LISTS)} in it; expected {EXPECTS}")
        for name in lists:
            if not isinstance(data[name], list):
                raise SourceError(f"{path}: `{name}` is not a list; expected {EXPECTS}")
            found.setdefault(name, []).extend(data[name])
    if "monitors" not in found:
        raise SourceError(f"no getMonitors response among {', '.join(map(str, paths))}: {EXPECTS}")
    return found


def _contact(imported: Imported, contact: dict[str, Any]) -> str | None:
    name = str(contact.get("friendly_name") or contact.get("id"))
    item = imported.item("alert contact", name)
    kind = int(contact.get("type") or 0)
    if kind not in CHANNELS:
        item.skip(WITHOUT_CHANNEL.get(kind, f"type {kind} has no Upwatch channel"))
        return None
    channel, field = CHANNELS[kind]
    key = imported.key("providers", name)
    value = str(contact.get("value") or "")
    config: dict[str, Any]
    if channel == "email":
        config = {"to": [value]}
    else:
        config = {field: imported.secret(item, "providers", key, field, value)}
    if channel == "webhook":
        item.approximate("Upwatch posts its own JSON payload, not UptimeRobot's fields")
    if contact.get("status") in (0, 1):
        item.approximate("not active in UptimeRobot: active here")
    imported.add("providers", {"key": key, "type": channel, "name": name, "config": config}, item)
    return key


def _statuses(given: Any, item: Item) -> list[int] | None:
    """``custom_http_statuses`` (``404:0_418:1``: 1 up, 0 down) as the codes that are up."""
    pairs = re.findall(r"(\d{3}):([01])", str(given or ""))
    if not pairs:
        return None
    up = {int(code) for code, state in pairs if state == "1"}
    down = {int(code) for code, state in pairs if state == "0"}
    item.approximate(
        "custom statuses: the usual 2xx and 3xx codes and "
        + ", ".join(f"{c} {'up' if s == '1' else 'down'}" for c, s in pairs)
    )
    return sorted((set(USUAL_CODES) | up) - down)


def _http(imported: Imported, monitor: dict[str, Any], key: str, item: Item) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "http", "url": str(monitor.get("url") or "")}
    method = METHODS.get(int(monitor.get("http_method") or 2), "GET")
    entry["method"] = method
    body = monitor.get("post_value")
    if body not in (None, "", {}) and method not in ("GET", "HEAD"):
        entry["body"] = body if isinstance(body, str) else json.dumps(body)
    headers = dict(monitor.get("custom_http_headers") or {})
    entry["url"], basic = without_credentials(entry["url"])
    if basic is not None:
        headers.setdefault("Authorization", basic)
    if monitor.get("http_username") or monitor.get("http_password"):
        pair = f"{monitor.get('http_username', '')}:{monitor.get('http_password', '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        if monitor.get("http_auth_type") == 2:
            item.approximate("digest authentication sent as basic")
    entry.update(monitor_headers(imported, item, key, headers))
    codes = _statuses(monitor.get("custom_http_statuses"), item)
    if codes is not None:
        entry["expectedStatusCodes"] = codes
    word = str(monitor.get("keyword_value") or "")
    if monitor.get("type") == 2 and word:
        present = monitor.get("keyword_type") != 2  # 2: "not exists"
        sensitive = monitor.get("keyword_case_type") != 1  # 1: case-insensitive
        if present and sensitive:
            entry["keyword"] = word
        elif sensitive:
            entry["assertions"] = [{"source": "body", "operator": "notContains", "value": word}]
        else:
            pattern = re.escape(word) if present else rf"\A(?!.*{re.escape(word)})"
            value = f"(?is){pattern}" if not present else f"(?i){pattern}"
            entry["assertions"] = [{"source": "body", "operator": "matches", "value": value}]
    return entry


def _monitor(imported: Imported, monitor: dict[str, Any], contacts: set[str]) -> str | None:
    name = str(monitor.get("friendly_name") or monitor.get("id"))
    item = imported.item("monitor", name)
    kind = monitor.get("type")
    key = imported.key("monitors", name)
    target = str(monitor.get("url") or "")
    entry: dict[str, Any]
    if kind in (1, 2):
        entry = _http(imported, monitor, key, item)
    elif kind == 3:
        entry = {"type": "ping", "host": target}
    elif kind == 4:
        sub = int(monitor.get("sub_type") or 99)
        port = PORTS.get(sub) or int(monitor.get("port") or 0)
        entry = {"type": "tcp", "host": target, "port": port}
    elif kind == 5:
        entry = {"type": "heartbeat"}
    else:
        item.skip(f"type {kind} has no Upwatch monitor type")
        return None
    entry = {"key": key, "name": name, **entry}
    interval = int(monitor.get("interval") or 300)
    entry["intervalSeconds"] = max(10, min(86_400, interval))
    if monitor.get("timeout") and entry["type"] == "http":
        entry["timeoutSeconds"] = max(1, min(60, int(monitor["timeout"])))
    if monitor.get("status") == 0:
        entry["isActive"] = False
    named = {str(c.get("id")) for c in monitor.get("alert_contacts") or []}
    if contacts and named != contacts:
        item.approximate("alerts every provider, not only its alert contacts")
    imported.add("monitors", entry, item)
    return key


def _page(
    imported: Imported, psp: dict[str, Any], keys: dict[str, str], names: dict[str, str]
) -> None:
    name = str(psp.get("friendly_name") or psp.get("id"))
    item = imported.item("status page", name)
    listed = psp.get("monitors")
    ids = list(keys) if listed in (0, "0", None) else [str(m) for m in listed or []]
    components = [{"monitor": keys[i], "name": names[i][:100]} for i in ids if i in keys]
    if len(components) < len(ids):
        item.approximate("monitors that were skipped left out")
    if psp.get("custom_url"):
        item.approximate(f"custom domain {psp['custom_url']} not carried over")
    key = imported.key("statusPages", name)
    entry = {"key": key, "name": name[:100], "slug": key, "components": components}
    imported.add("statusPages", entry, item)


def read(paths: Sequence[Path]) -> Imported:
    found = _responses(paths)
    imported = Imported("UptimeRobot")
    contacts: dict[str, str] = {}
    for contact in found.get("alert_contacts", []):
        key = _contact(imported, contact)
        if key is not None:
            contacts[str(contact.get("id"))] = key
    keys: dict[str, str] = {}
    names: dict[str, str] = {}
    for monitor in found["monitors"]:
        if not isinstance(monitor, dict):
            raise SourceError(f"a monitor is not an object; expected {EXPECTS}")
        key = _monitor(imported, monitor, set(contacts))
        if key is not None:
            keys[str(monitor.get("id"))] = key
            names[str(monitor.get("id"))] = str(monitor.get("friendly_name") or key)
    for psp in found.get("psps", []):
        _page(imported, psp, keys, names)
    return imported


SOURCE = Source(name="uptimerobot", label="UptimeRobot", expects=EXPECTS, read=read, many=True)
