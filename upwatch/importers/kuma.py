"""Uptime Kuma: its SQLite database (``kuma.db``, 1.x and 2.x schemas) or a 1.x JSON backup.

Both forms are read into the same rows (the database's column names), then mapped. The
database is opened read-only; Kuma 2.x records its schema in ``knex_migrations``, 1.x in the
``database_version`` setting (Kuma 2.x keeps that setting too, at 10, under its migrations).
What carries over and what does not is listed in docs/migrating.md (Uptime Kuma).
"""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from upwatch.importers.output import Imported
from upwatch.importers.report import Item
from upwatch.importers.source import Source, SourceError, read_json

EXPECTS = "Uptime Kuma's database file (kuma.db, 1.x or 2.x) or a 1.x JSON backup"
# The newest schemas read: Kuma 1.x's last database version, and 2.x's last migration as of
# 2.5.3. A database migrated past them is refused rather than half read.
LATEST_1X_VERSION: Final = 10
LATEST_2X_MIGRATION: Final = "2026-08-18-0000-sqlite-only-drop-analytics-type-check.js"
SUPPORTED: Final = "Uptime Kuma 1.x (database version up to 10) and 2.x up to 2.5.3"
SQLITE_MAGIC: Final = b"SQLite format 3\x00"
# Names of header values that are secrets (besides those Upwatch always keeps secret).
SECRET_HEADER: Final = re.compile(r"auth|token|key|secret|cookie|pass|session", re.IGNORECASE)
HTTP_METHODS: Final = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
MAX_CODES: Final = 50  # an Upwatch monitor lists at most 50 accepted status codes
# JSONata comparisons of a json-query monitor, as assertion operators.
JSON_OPERATORS: Final = {
    "==": "equals",
    "!=": "notEquals",
    "<": "lessThan",
    "<=": "lessThanOrEqual",
    ">": "greaterThan",
    ">=": "greaterThanOrEqual",
    "contains": "contains",
}
# A JSONata expression that is a plain path (``data.items[0].name``) reads as JSONPath.
PLAIN_PATH: Final = re.compile(r"^[A-Za-z_$][\w$]*(\[\d+\])*(\.[A-Za-z_$][\w$]*(\[\d+\])*)*$")
# Kuma's notifications that are one webhook URL, as the Upwatch channel and Kuma's field.
WEBHOOK_CHANNELS: Final = {
    "mattermost": ("mattermost", "mattermostWebhookUrl"),
    "rocket.chat": ("rocketchat", "rocketwebhookURL"),
    "GoogleChat": ("googlechat", "googleChatWebhookURL"),
}
RRULE_DAYS: Final = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")  # Kuma: 1 (Monday) to 7
# Kuma's types that have no Upwatch equivalent, and why in words.
NO_EQUIVALENT: Final = {
    "group": "a group: Upwatch has no monitor groups (its monitors were imported on their own)",
    "docker": "Docker containers are not an Upwatch monitor type",
    "real-browser": "browser checks are not an Upwatch monitor type",
    "gamedig": "game servers are not an Upwatch monitor type",
    "steam": "game servers are not an Upwatch monitor type",
    "manual": "a manual monitor is set by hand: Upwatch has none",
}


@dataclass
class Kuma:
    """What the importer reads, in the database's own column names."""

    schema: str  # "Kuma 2.x database", "Kuma 1.x database", "Kuma 1.x backup (version)"
    monitors: list[dict[str, Any]]
    notifications: list[dict[str, Any]]  # {id, name, active, is_default, config: dict}
    monitor_notifications: dict[int, list[int]] = field(default_factory=dict)
    tags: dict[int, list[tuple[str, str]]] = field(default_factory=dict)  # monitor -> (name, value)
    maintenance: list[dict[str, Any]] = field(default_factory=list)
    maintenance_monitors: dict[int, list[int]] = field(default_factory=dict)
    status_pages: list[dict[str, Any]] = field(default_factory=list)
    # page -> [(group name, [monitor ids])], in the page's order
    page_groups: dict[int, list[tuple[str, list[int]]]] = field(default_factory=dict)
    page_domains: dict[int, list[str]] = field(default_factory=dict)


def read(paths: Sequence[Path]) -> Imported:
    path = paths[0]
    try:
        with path.open("rb") as file:
            head = file.read(len(SQLITE_MAGIC))
    except IsADirectoryError:
        raise SourceError(f"{path}: a directory (expected {EXPECTS})") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read: {exc.strerror} (expected {EXPECTS})") from None
    kuma = read_database(path) if head == SQLITE_MAGIC else read_backup(path)
    return imported_from(kuma)


# ---- reading the database ------------------------------------------------------------------


def read_database(path: Path) -> Kuma:
    """The database's rows; ``SourceError`` for a corrupt file, another application's database
    or a schema newer than the ones known."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    if _wal_without_log(path):
        # Kuma keeps its database in WAL mode: even read-only, SQLite would leave -wal and
        # -shm files beside it. With no -wal file there is nothing beyond the file itself to
        # read, so it is opened as immutable and nothing is created; with one (Kuma running,
        # or copied along), its recent changes are read too.
        uri += "&immutable=1"
    try:
        connection = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise SourceError(f"{path}: cannot be opened: {exc} (expected {EXPECTS})") from None
    connection.row_factory = sqlite3.Row
    try:
        return _rows(connection, path)
    except sqlite3.DatabaseError as exc:
        raise SourceError(
            f"{path}: not a readable SQLite database ({exc}); expected {EXPECTS}"
        ) from None
    finally:
        connection.close()


def _wal_without_log(path: Path) -> bool:
    with path.open("rb") as file:
        header = file.read(20)
    write_version = header[18] if len(header) == 20 else 0
    return write_version == 2 and not path.with_name(path.name + "-wal").exists()


def _rows(db: sqlite3.Connection, path: Path) -> Kuma:
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    needed = {"monitor", "notification", "setting"}
    if not needed <= tables:
        raise SourceError(
            f"{path}: a SQLite database without Kuma's tables ({', '.join(sorted(needed))}); "
            f"expected {EXPECTS}"
        )
    schema = _schema(db, tables, path)
    kuma = Kuma(
        schema=schema,
        monitors=[dict(row) for row in db.execute("SELECT * FROM monitor ORDER BY id")],
        notifications=[],
    )
    for row in db.execute("SELECT * FROM notification ORDER BY id"):
        kuma.notifications.append({**dict(row), "config": _json_object(row["config"])})
    for monitor_id, notification_id in _pairs(
        db, tables, "monitor_notification", "monitor_id", "notification_id"
    ):
        kuma.monitor_notifications.setdefault(monitor_id, []).append(notification_id)
    if {"tag", "monitor_tag"} <= tables:
        query = (
            "SELECT monitor_tag.monitor_id, tag.name, monitor_tag.value FROM monitor_tag "
            "JOIN tag ON tag.id = monitor_tag.tag_id ORDER BY monitor_tag.id"
        )
        for monitor_id, name, value in db.execute(query):
            kuma.tags.setdefault(monitor_id, []).append((str(name), str(value or "")))
    if "maintenance" in tables:
        kuma.maintenance = [dict(r) for r in db.execute("SELECT * FROM maintenance ORDER BY id")]
    for monitor_id, maintenance_id in _pairs(
        db, tables, "monitor_maintenance", "monitor_id", "maintenance_id"
    ):
        kuma.maintenance_monitors.setdefault(maintenance_id, []).append(monitor_id)
    if {"status_page", "group", "monitor_group"} <= tables:
        kuma.status_pages = [dict(r) for r in db.execute("SELECT * FROM status_page ORDER BY id")]
        groups = db.execute(
            'SELECT id, name, status_page_id FROM "group" WHERE public = 1 ORDER BY weight, id'
        ).fetchall()
        for group_id, name, page_id in groups:
            members = [
                int(r[0])
                for r in db.execute(
                    "SELECT monitor_id FROM monitor_group WHERE group_id = ? ORDER BY weight, id",
                    (group_id,),
                )
            ]
            kuma.page_groups.setdefault(page_id, []).append((str(name), members))
    if "status_page_cname" in tables:
        for page_id, domain in db.execute("SELECT status_page_id, domain FROM status_page_cname"):
            kuma.page_domains.setdefault(page_id, []).append(str(domain))
    return kuma


def _schema(db: sqlite3.Connection, tables: set[str], path: Path) -> str:
    """Which Kuma wrote the database, refusing one newer than the importer knows."""
    if "knex_migrations" in tables:
        names = [str(r[0]) for r in db.execute("SELECT name FROM knex_migrations")]
        newer = sorted(n for n in names if n > LATEST_2X_MIGRATION)
        if newer:
            raise SourceError(
                f"{path}: a Kuma database of a newer schema than this importer reads (migration "
                f"{newer[-1]}); supported: {SUPPORTED}"
            )
        return "Kuma 2.x database"
    row = db.execute("SELECT value FROM setting WHERE key = 'database_version'").fetchone()
    try:
        version = int(json.loads(row[0])) if row is not None else 0
    except (TypeError, ValueError):
        version = 0
    if version > LATEST_1X_VERSION:
        raise SourceError(
            f"{path}: a Kuma database of a newer schema than this importer reads (database "
            f"version {version}); supported: {SUPPORTED}"
        )
    return "Kuma 1.x database"


def _pairs(
    db: sqlite3.Connection, tables: set[str], table: str, left: str, right: str
) -> Iterator[tuple[int, int]]:
    if table in tables:
        for a, b in db.execute(f"SELECT {left}, {right} FROM {table} ORDER BY id"):  # noqa: S608
            yield int(a), int(b)


def _json_object(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# ---- reading a 1.x backup --------------------------------------------------------------------

# The backup's monitor fields (the 1.x monitor's toJSON), as the database names them.
BACKUP_COLUMNS: Final = {
    "retryInterval": "retry_interval",
    "resendInterval": "resend_interval",
    "invertKeyword": "invert_keyword",
    "ignoreTls": "ignore_tls",
    "upsideDown": "upside_down",
    "packetSize": "packet_size",
    "pushToken": "push_token",
    "databaseConnectionString": "database_connection_string",
    "databaseQuery": "database_query",
    "authMethod": "auth_method",
    "jsonPath": "json_path",
    "expectedValue": "expected_value",
    "proxyId": "proxy_id",
    "grpcUrl": "grpc_url",
}


def read_backup(path: Path) -> Kuma:
    """A 1.x "Export Backup" file: ``{version, notificationList, monitorList}``."""
    data = read_json(path, EXPECTS)
    if not (
        isinstance(data, dict)
        and isinstance(data.get("monitorList"), list)
        and isinstance(data.get("notificationList"), list)
    ):
        raise SourceError(
            f"{path}: JSON without Kuma's backup fields (version, notificationList, "
            f"monitorList); expected {EXPECTS}"
        )
    version = str(data.get("version") or "")
    if not version.startswith("1."):
        raise SourceError(
            f"{path}: a Kuma backup of version {version or '(none)'}; only 1.x made backups "
            f"(2.x reads its database file instead); supported: {SUPPORTED}"
        )
    kuma = Kuma(schema=f"Kuma {version} backup", monitors=[], notifications=[])
    for given in data["notificationList"]:
        if isinstance(given, dict):
            kuma.notifications.append(
                {
                    "id": given.get("id"),
                    "name": given.get("name"),
                    "active": given.get("active", True),
                    "is_default": given.get("isDefault", given.get("is_default", False)),
                    "config": _json_object(given.get("config")),
                }
            )
    for given in data["monitorList"]:
        if not isinstance(given, dict):
            continue
        row = {BACKUP_COLUMNS.get(str(k), str(k)): v for k, v in given.items()}
        row["accepted_statuscodes_json"] = json.dumps(given.get("accepted_statuscodes") or [])
        kuma.monitors.append(row)
        linked = given.get("notificationIDList") or {}
        kuma.monitor_notifications[int(given["id"])] = [int(k) for k, on in linked.items() if on]
        kuma.tags[int(given["id"])] = [
            (str(t.get("name")), str(t.get("value") or ""))
            for t in given.get("tags") or []
            if isinstance(t, dict)
        ]
    return kuma


# ---- mapping ---------------------------------------------------------------------------------


def imported_from(kuma: Kuma) -> Imported:
    imported = Imported(f"Uptime Kuma ({kuma.schema})")
    keys = _Notifications(imported, kuma).add()
    monitor_keys = _Monitors(imported, kuma, keys).add()
    _maintenance(imported, kuma, monitor_keys)
    _status_pages(imported, kuma, monitor_keys)
    return imported


def _truthy(value: Any) -> bool:
    return value not in (None, 0, "0", False, "", "false")


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


class _Notifications:
    def __init__(self, imported: Imported, kuma: Kuma) -> None:
        self.imported = imported
        self.kuma = kuma

    def add(self) -> dict[int, str]:
        keys: dict[int, str] = {}
        monitors = len([m for m in self.kuma.monitors if m.get("type") != "group"])
        for row in self.kuma.notifications:
            name = _text(row.get("name")) or f"Notification {row.get('id')}"
            config = row["config"]
            kuma_type = _text(config.get("type"))
            item = self.imported.item("notification", name)
            key = self.imported.key("providers", name)
            made = self._config(kuma_type, config, item, key)
            if made is None:
                continue
            channel, channel_config = made
            entry: dict[str, Any] = {
                "key": key,
                "type": channel,
                "name": name[:100],
                "config": channel_config,
            }
            if not _truthy(row.get("active", True)):
                entry["isEnabled"] = False
            linked = sum(row.get("id") in ids for ids in self.kuma.monitor_notifications.values())
            if linked < monitors:
                item.approximate(
                    f"Upwatch alerts it for every monitor (Kuma: {linked} of {monitors})"
                )
            self.imported.add("providers", entry, item)
            keys[int(row["id"])] = key
        return keys

    def _secret(self, item: Item, key: str, name: str, value: Any) -> dict[str, str]:
        return self.imported.secret(item, "providers", key, name, _text(value))

    def _config(
        self, kuma_type: str, c: Mapping[str, Any], item: Item, key: str
    ) -> tuple[str, dict[str, Any]] | None:
        """The Upwatch channel and its config, or ``None`` (skipped, with the reason)."""
        secret = self._secret
        if kuma_type == "webhook":
            config: dict[str, Any] = {"url": secret(item, key, "url", c.get("webhookURL"))}
            headers = _json_object(c.get("webhookAdditionalHeaders"))
            if headers:
                config["headers"] = {
                    str(k): secret(item, key, f"header_{k}", v) for k, v in headers.items()
                }
            if _text(c.get("webhookContentType")) not in ("", "json"):
                item.approximate("sent as Upwatch's JSON body, not Kuma's form or custom body")
            return "webhook", config
        if kuma_type == "slack":
            if _text(c.get("slackchannel")):
                item.approximate("posted to the webhook's own channel (Kuma's override left out)")
            url = c.get("slackwebhookURL")
            return "slack", {"webhookUrl": secret(item, key, "webhookUrl", url)}
        if kuma_type == "discord":
            url = c.get("discordWebhookUrl")
            return "discord", {"webhookUrl": secret(item, key, "webhookUrl", url)}
        if kuma_type == "teams":
            return "teams", {"webhookUrl": secret(item, key, "webhookUrl", c.get("webhookUrl"))}
        if kuma_type == "telegram":
            if _text(c.get("telegramServerUrl")) not in ("", "https://api.telegram.org"):
                item.approximate("sent through api.telegram.org, not Kuma's own Bot API server")
            return "telegram", {
                "botToken": secret(item, key, "botToken", c.get("telegramBotToken")),
                "chatId": _text(c.get("telegramChatID")),
            }
        if kuma_type == "smtp":
            to = [a.strip() for a in _text(c.get("smtpTo")).split(",") if a.strip()]
            if not to:
                item.skip("an SMTP notification without recipients")
                return None
            item.approximate(
                "sent through Upwatch's own mail server: Kuma's SMTP server, login and "
                "password are not carried over"
            )
            return "email", {"to": to}
        if kuma_type == "PagerDuty":
            routing = secret(item, key, "routingKey", c.get("pagerdutyIntegrationKey"))
            return "pagerduty", {"routingKey": routing}
        if kuma_type == "twilio":
            return "sms", {
                "to": _text(c.get("twilioToNumber")),
                "from_": _text(c.get("twilioFromNumber")),
                "accountSid": _text(c.get("twilioAccountSID")),
                "authToken": secret(item, key, "authToken", c.get("twilioAuthToken")),
            }
        hook = WEBHOOK_CHANNELS.get(kuma_type)
        if hook is not None:
            channel, field_name = hook
            return channel, {"webhookUrl": secret(item, key, "webhookUrl", c.get(field_name))}
        if kuma_type == "gotify":
            return "gotify", {
                "serverUrl": _text(c.get("gotifyserverurl")),
                "appToken": secret(item, key, "appToken", c.get("gotifyapplicationToken")),
            }
        if kuma_type == "pushover":
            config = {
                "userKey": _text(c.get("pushoveruserkey")),
                "appToken": secret(item, key, "appToken", c.get("pushoverapptoken")),
            }
            if _text(c.get("pushoverdevice")):
                config["device"] = _text(c.get("pushoverdevice"))
            return "pushover", config
        if kuma_type == "Opsgenie":
            region = "eu" if _text(c.get("opsgenieRegion")) == "eu" else "us"
            return "opsgenie", {
                "apiKey": secret(item, key, "apiKey", c.get("opsgenieApiKey")),
                "region": region,
            }
        if kuma_type == "matrix":
            return "matrix", {
                "homeserverUrl": _text(c.get("homeserverUrl")),
                "roomId": _text(c.get("internalRoomId")),
                "accessToken": secret(item, key, "accessToken", c.get("accessToken")),
            }
        item.skip(f"Upwatch has no channel for Kuma's {kuma_type or 'unknown'} notifications")
        return None


class _Monitors:
    def __init__(self, imported: Imported, kuma: Kuma, providers: Mapping[int, str]) -> None:
        self.imported = imported
        self.kuma = kuma
        self.providers = providers

    def add(self) -> dict[int, str]:
        keys: dict[int, str] = {}
        for row in self.kuma.monitors:
            name = _text(row.get("name")) or f"Monitor {row.get('id')}"
            item = self.imported.item("monitor", name)
            key = self.imported.key("monitors", name)
            entry = self._entry(row, item, key)
            if entry is None:
                continue
            self.imported.add("monitors", entry, item)
            keys[int(row["id"])] = key
        return keys

    def _entry(self, row: dict[str, Any], item: Item, key: str) -> dict[str, Any] | None:
        kind = _text(row.get("type"))
        if kind in NO_EQUIVALENT:
            item.skip(NO_EQUIVALENT[kind])
            return None
        if _truthy(row.get("upside_down")):
            item.skip("upside-down mode (up when the target fails) has no Upwatch equivalent")
            return None
        entry: dict[str, Any] = {"key": key, "name": _text(row.get("name"))[:100]}
        typed = {
            "http": self._http,
            "keyword": self._http,
            "json-query": self._http,
            "port": self._port,
            "ping": self._ping,
            "dns": self._dns,
            "push": self._push,
            "postgres": self._database,
            "mysql": self._database,
            "redis": self._database,
        }.get(kind)
        if typed is None:
            item.skip(f"Kuma's {kind or 'unknown'} monitors are not an Upwatch monitor type")
            return None
        if not typed(row, item, key, entry):
            return None
        self._common(row, item, entry)
        return entry

    def _common(self, row: dict[str, Any], item: Item, entry: dict[str, Any]) -> None:
        interval = int(row.get("interval") or 60)
        entry["intervalSeconds"] = min(max(interval, 10), 86_400)
        if entry["intervalSeconds"] != interval:
            item.approximate(f"interval {interval} s became {entry['intervalSeconds']} s")
        retries = int(row.get("maxretries") or 0)
        entry["retries"] = min(retries, 10)
        if retries > 10:
            item.approximate(f"{retries} retries became 10")
        retry_interval = int(row.get("retry_interval") or interval)
        if retries and retry_interval != interval:
            item.approximate(
                f"retries are checked every {interval} s (Kuma retried every {retry_interval} s)"
            )
        # Kuma's timeout is the HTTP request's; its other types time out on their own terms.
        if entry["type"] == "http" and row.get("timeout") not in (None, 0, "0"):
            timeout = float(row["timeout"])
            entry["timeoutSeconds"] = min(timeout, 60.0)
            if timeout > 60:
                item.approximate(f"timeout {timeout:g} s became 60 s")
        if not _truthy(row.get("active", 1)):
            entry["isActive"] = False
        tags = self.kuma.tags.get(int(row["id"]), [])
        if tags:
            words = ", ".join(f"{n}={v}" if v else n for n, v in tags)
            item.approximate(f"tags {words} left out (Upwatch monitors have no tags)")
        if _text(row.get("description")):
            item.approximate("its description left out")
        if row.get("proxy_id"):
            item.approximate("checked directly, not through Kuma's proxy")

    # -- the types --

    def _http(self, row: dict[str, Any], item: Item, key: str, entry: dict[str, Any]) -> bool:
        url = _text(row.get("url"))
        entry.update(type="http", url=url)
        method = _text(row.get("method")).upper() or "GET"
        if method not in HTTP_METHODS:
            item.skip(f"the HTTP method {method} is not one Upwatch sends")
            return False
        if method != "GET":
            entry["method"] = method
        if _text(row.get("body")):
            entry["body"] = str(row["body"])
        headers, secret_names = self._headers(row, item, key)
        assertions = self._status_codes(row, item, entry)
        kind = _text(row.get("type"))
        keyword = _text(row.get("keyword"))
        if kind == "keyword" and keyword:
            if _truthy(row.get("invert_keyword")):
                assertions.append({"source": "body", "operator": "notContains", "value": keyword})
            else:
                entry["keyword"] = keyword
        if kind == "json-query" and not self._json_query(row, item, assertions):
            return False
        if assertions:
            entry["assertions"] = assertions
        if headers:
            entry["headers"] = headers
        if secret_names:
            entry["secretHeaders"] = secret_names
        if _truthy(row.get("ignore_tls")):
            item.approximate("Upwatch verifies the certificate (Kuma ignored TLS errors)")
        return True

    def _headers(
        self, row: dict[str, Any], item: Item, key: str
    ) -> tuple[dict[str, Any], list[str]]:
        headers: dict[str, Any] = {}
        secret_names: list[str] = []
        given = _text(row.get("headers"))
        if given:
            parsed = _json_object(given)
            if not parsed:
                item.approximate("its headers were not a JSON object: left out")
            for name, value in parsed.items():
                if SECRET_HEADER.search(name):
                    headers[name] = self.imported.secret(item, "monitors", key, name, _text(value))
                    if name.lower() not in ("authorization", "cookie", "proxy-authorization"):
                        secret_names.append(name)
                else:
                    headers[name] = _text(value)
        auth = _text(row.get("auth_method"))
        user, password = row.get("basic_auth_user"), row.get("basic_auth_pass")
        bearer = _text(row.get("bearer_token"))
        if auth in ("basic", "") and (user or password):
            pair = f"{_text(user)}:{_text(password)}".encode()
            value = "Basic " + base64.b64encode(pair).decode()
            headers["Authorization"] = self.imported.secret(
                item, "monitors", key, "Authorization", value
            )
        elif auth == "bearer" and bearer:
            headers["Authorization"] = self.imported.secret(
                item, "monitors", key, "Authorization", f"Bearer {bearer}"
            )
        elif auth not in ("", "basic", "bearer"):
            item.approximate(f"Kuma's {auth} authentication is not carried over")
        return headers, secret_names

    def _status_codes(
        self, row: dict[str, Any], item: Item, entry: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """Kuma's accepted codes (``["200-299", "301"]``) as the list Upwatch takes, or as
        bounds on the status code when they are more than it lists."""
        try:
            given = json.loads(row.get("accepted_statuscodes_json") or "[]")
        except ValueError:
            given = []
        ranges: list[tuple[int, int]] = []
        for text in given:
            low, _, high = str(text).partition("-")
            try:
                ranges.append((int(low), int(high or low)))
            except ValueError:
                item.approximate(f"the accepted status code {text!r} was not a number: left out")
        codes = sorted({c for low, high in ranges for c in range(low, high + 1)})
        if not codes:
            return []
        if len(codes) <= MAX_CODES:
            entry["expectedStatusCodes"] = codes
            return []
        lowest, highest = codes[0], codes[-1]
        if highest - lowest + 1 != len(codes):
            item.approximate(
                f"accepted status codes {', '.join(map(str, given))} checked as {lowest}-{highest}"
            )
        return [
            {"source": "statusCode", "operator": "greaterThanOrEqual", "value": lowest},
            {"source": "statusCode", "operator": "lessThanOrEqual", "value": highest},
        ]

    def _json_query(
        self, row: dict[str, Any], item: Item, assertions: list[dict[str, Any]]
    ) -> bool:
        expression = _text(row.get("json_path"))
        if not PLAIN_PATH.match(expression):
            item.skip(
                f"the JSONata expression {expression!r} is not a plain path Upwatch can "
                "read as JSONPath"
            )
            return False
        operator = _text(row.get("json_path_operator")) or "=="
        if operator not in JSON_OPERATORS:
            item.skip(f"the JSON query operator {operator!r} has no Upwatch equivalent")
            return False
        value: Any = _text(row.get("expected_value"))
        if JSON_OPERATORS[operator] in (
            "lessThan",
            "lessThanOrEqual",
            "greaterThan",
            "greaterThanOrEqual",
        ):
            value = _number(value)
        path = "$." + expression.removeprefix("$.").removeprefix("$")
        assertions.append(
            {"source": "json", "path": path, "operator": JSON_OPERATORS[operator], "value": value}
        )
        return True

    def _port(self, row: dict[str, Any], item: Item, key: str, entry: dict[str, Any]) -> bool:
        entry.update(type="tcp", host=_text(row.get("hostname")), port=int(row.get("port") or 0))
        return True

    def _ping(self, row: dict[str, Any], item: Item, key: str, entry: dict[str, Any]) -> bool:
        entry.update(type="ping", host=_text(row.get("hostname")))
        count = row.get("ping_count")
        if count:
            entry["packetCount"] = min(max(int(count), 1), 10)
        return True

    def _dns(self, row: dict[str, Any], item: Item, key: str, entry: dict[str, Any]) -> bool:
        entry.update(type="dns", host=_text(row.get("hostname")))
        record = _text(row.get("dns_resolve_type")) or "A"
        if record not in ("A", "AAAA", "CNAME", "MX", "TXT", "NS"):
            item.skip(f"the DNS record type {record} is not one Upwatch checks")
            return False
        entry["recordType"] = record
        server = _text(row.get("dns_resolve_server"))
        if server:
            item.approximate(f"resolved by Upwatch's resolver, not {server}")
        if _text(row.get("conditions")) not in ("", "[]"):
            item.approximate("its conditions on the answer are not carried over")
        return True

    def _push(self, row: dict[str, Any], item: Item, key: str, entry: dict[str, Any]) -> bool:
        entry["type"] = "heartbeat"
        item.approximate(
            "the job must now report to the monitor's Upwatch heartbeat URL, not Kuma's push URL"
        )
        return True

    def _database(self, row: dict[str, Any], item: Item, key: str, entry: dict[str, Any]) -> bool:
        kind = _text(row.get("type"))
        url = _text(row.get("database_connection_string"))
        if kind == "postgres" and url.startswith("postgres://"):
            url = "postgresql://" + url.removeprefix("postgres://")
        entry["type"] = kind
        entry["url"] = (
            self.imported.secret(item, "monitors", key, "url", url)
            if urlsplit(url).password
            else url
        )
        if _text(row.get("database_query")):
            item.approximate("its query is not carried over: Upwatch connects and pings")
        return True


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


# ---- maintenance and status pages ------------------------------------------------------------


def _zone(name: Any) -> tuple[str, ZoneInfo]:
    text = _text(name)
    if text in ("", "SAME_AS_SERVER", "UTC"):
        return "UTC", ZoneInfo("UTC")
    try:
        return text, ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        return "UTC", ZoneInfo("UTC")


def _instant(day: date, at: time, zone: ZoneInfo) -> str:
    moment = datetime.combine(day, at, tzinfo=zone).astimezone(ZoneInfo("UTC"))
    return moment.isoformat().replace("+00:00", "Z")


def _day(text: Any) -> date:
    return datetime.strptime(_text(text)[:10], "%Y-%m-%d").date()  # noqa: DTZ007 - a date


def _clock(text: Any) -> time:
    hours, _, minutes = _text(text).partition(":")
    return time(int(hours), int(minutes or 0))


def _maintenance(imported: Imported, kuma: Kuma, monitor_keys: Mapping[int, str]) -> None:
    for row in kuma.maintenance:
        title = _text(row.get("title")) or f"Maintenance {row.get('id')}"
        item = imported.item("maintenance", title)
        if not _truthy(row.get("active", 1)):
            item.skip("paused in Kuma")
            continue
        try:
            window = _window(row, item)
        except ValueError:
            item.skip("its dates could not be read")
            continue
        if window is None:
            continue
        entry: dict[str, Any] = {"key": imported.key("maintenance", title), "title": title[:200]}
        entry.update(window)
        named = kuma.maintenance_monitors.get(int(row["id"]), [])
        if named:
            entry["monitors"] = [monitor_keys[m] for m in named if m in monitor_keys]
            if not entry["monitors"]:
                item.skip("none of its monitors was imported")
                continue
            if len(entry["monitors"]) < len(named):
                item.approximate("monitors that were skipped left out")
        else:
            item.approximate("it names no monitor: it covers the whole project")
        if _text(row.get("description")):
            item.approximate("its description left out")
        imported.add("maintenance", entry, item)


def _window(row: Mapping[str, Any], item: Item) -> dict[str, Any] | None:
    """startsAt, endsAt, rrule and timezone for Kuma's strategy, or None (skipped)."""
    strategy = _text(row.get("strategy"))
    zone_name, zone = _zone(row.get("timezone"))
    if _text(row.get("timezone")) == "SAME_AS_SERVER":
        item.approximate("Kuma's server time zone read as UTC")
    if strategy == "single":
        start, end = _text(row.get("start_date")), _text(row.get("end_date"))
        starts = datetime.fromisoformat(start).replace(tzinfo=zone)
        ends = datetime.fromisoformat(end).replace(tzinfo=zone)
        return {
            "startsAt": _instant(starts.date(), starts.time(), zone),
            "endsAt": _instant(ends.date(), ends.time(), zone),
            "timezone": zone_name,
        }
    if strategy == "cron":
        return _cron_window(row, item, zone_name, zone)
    if strategy not in ("recurring-weekday", "recurring-interval", "recurring-day-of-month"):
        item.skip(
            f"a {strategy or 'manual'} window (switched on and off by hand in Kuma): "
            "Upwatch windows follow a schedule"
        )
        return None
    first = _day(row.get("start_date"))
    start_at, end_at = _clock(row.get("start_time")), _clock(row.get("end_time"))
    if strategy == "recurring-weekday":
        days = sorted(int(d) for d in json.loads(row.get("weekdays") or "[]"))
        if not days:
            item.skip("a weekly window without days")
            return None
        rule = "FREQ=WEEKLY;BYDAY=" + ",".join(RRULE_DAYS[d - 1] for d in days)
        while first.isoweekday() not in days:  # the first occurrence is one of its days
            first += timedelta(days=1)
    elif strategy == "recurring-interval":
        rule = f"FREQ=DAILY;INTERVAL={int(row.get('interval_day') or 1)}"
    else:
        days_of_month = [str(d) for d in json.loads(row.get("days_of_month") or "[]")]
        numbers = [d for d in days_of_month if d.isdigit()]
        if len(numbers) < len(days_of_month):
            item.approximate("Kuma's last-day-of-month choices left out")
        if not numbers:
            item.skip("a monthly window without days Upwatch can name")
            return None
        rule = "FREQ=MONTHLY;BYMONTHDAY=" + ",".join(numbers)
        while str(first.day) not in numbers:
            first += timedelta(days=1)
    ends_day = first if end_at > start_at else first + timedelta(days=1)
    if _text(row.get("end_date")):
        until = _day(row.get("end_date"))
        rule += f";UNTIL={until.strftime('%Y%m%d')}T235959Z"
    return {
        "startsAt": _instant(first, start_at, zone),
        "endsAt": _instant(ends_day, end_at, zone),
        "rrule": rule,
        "timezone": zone_name,
    }


def _cron_window(
    row: Mapping[str, Any], item: Item, zone_name: str, zone: ZoneInfo
) -> dict[str, Any] | None:
    """A cron window of the form ``M H * * *`` or ``M H * * D``: daily or weekly."""
    fields = _text(row.get("cron")).split()
    duration = int(row.get("duration") or 0)
    simple = len(fields) == 5 and fields[0].isdigit() and fields[1].isdigit()
    if not simple or fields[2:4] != ["*", "*"] or duration <= 0:
        item.skip(f"the cron schedule {_text(row.get('cron'))!r} has no RRULE equivalent here")
        return None
    at = time(int(fields[1]), int(fields[0]))
    first = _day(row.get("start_date")) if _text(row.get("start_date")) else date(2026, 1, 1)
    rule = "FREQ=DAILY"
    if fields[4] != "*":
        days = [int(d) % 7 or 7 for d in fields[4].split(",") if d.isdigit()]
        if not days:
            item.skip(f"the cron schedule {_text(row.get('cron'))!r} has no RRULE equivalent")
            return None
        rule = "FREQ=WEEKLY;BYDAY=" + ",".join(RRULE_DAYS[d - 1] for d in sorted(days))
        while first.isoweekday() not in days:
            first += timedelta(days=1)
    starts = datetime.combine(first, at)
    ends = starts + timedelta(seconds=duration)
    return {
        "startsAt": _instant(starts.date(), starts.time(), zone),
        "endsAt": _instant(ends.date(), ends.time(), zone),
        "rrule": rule,
        "timezone": zone_name,
    }


def _status_pages(imported: Imported, kuma: Kuma, monitor_keys: Mapping[int, str]) -> None:
    for row in kuma.status_pages:
        title = _text(row.get("title")) or _text(row.get("slug"))
        item = imported.item("status page", title)
        entry: dict[str, Any] = {
            "key": imported.key("statusPages", _text(row.get("slug")) or title),
            "name": title[:100],
            "slug": _text(row.get("slug")),
        }
        if _text(row.get("description")):
            entry["description"] = _text(row.get("description"))
        if _text(row.get("theme")) == "dark":
            entry["theme"] = "dark"
        elif _text(row.get("theme")) == "auto":
            item.approximate("Kuma's automatic theme became the light one")
        if not _truthy(row.get("published", 1)):
            entry["visibility"] = "members"
            item.approximate("unpublished in Kuma: a members-only page")
        if _text(row.get("password")):
            item.approximate("its password is not carried over: set one in the console")
        if _text(row.get("custom_css")):
            entry["customCss"] = str(row["custom_css"])
        domains = kuma.page_domains.get(int(row["id"]), [])
        if domains:
            entry["customDomain"] = domains[0]
            if len(domains) > 1:
                item.approximate(f"only the first of its domains kept ({domains[0]})")
        if _text(row.get("footer_text")):
            item.approximate("its footer text left out")
        components: list[dict[str, Any]] = []
        for group, members in kuma.page_groups.get(int(row["id"]), []):
            for monitor_id in members:
                component: dict[str, Any] = {"monitor": monitor_keys.get(monitor_id, "")}
                component["group"] = group[:100]
                components.append(component)
        entry["components"] = components
        imported.add("statusPages", entry, item)


SOURCE = Source(name="kuma", label="Uptime Kuma", expects=EXPECTS, read=read)
