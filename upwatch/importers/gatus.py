"""Gatus: its ``config.yaml`` (endpoints, their conditions and alerts, ``alerting`` providers,
maintenance). Each endpoint becomes a monitor by its URL's scheme; its conditions become the
monitor's status codes, assertions and certificate warning, or are reported; the dashboard
becomes a status page with the endpoints' groups as component groups."""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from upwatch.importers.headers import monitor_headers, without_credentials
from upwatch.importers.output import Imported
from upwatch.importers.report import Item
from upwatch.importers.source import Source, SourceError, read_yaml

EXPECTS = "Gatus's config.yaml (a mapping with `endpoints`)"
KIND = "endpoint"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
# A fixed first day for repeated windows, so that the same config gives the same file.
FIRST_DAY: Final = "2026-01-05"
DAYS: Final = {
    "monday": "MO",
    "tuesday": "TU",
    "wednesday": "WE",
    "thursday": "TH",
    "friday": "FR",
    "saturday": "SA",
    "sunday": "SU",
}
_ORDERING: Final = {
    "<": "lessThan",
    "<=": "lessThanOrEqual",
    ">": "greaterThan",
    ">=": "greaterThanOrEqual",
}
_CONDITION = re.compile(r"^\s*(.+?)\s*(==|!=|<=|>=|<|>)\s*(.+?)\s*$")


def seconds(text: Any) -> float | None:
    """A Go duration (``30s``, ``1h30m``, ``250ms``) in seconds; None if it is not one."""
    value = str(text).strip()
    if not value or _DURATION.sub("", value):
        return None
    return sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION.findall(value))


def _value(text: str) -> str | int | float | bool:
    """A condition's right side as JSON would hold it."""
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


class _Monitor:
    """One endpoint's monitor entry while its conditions are read."""

    def __init__(self, kind: str, item: Item) -> None:
        self.kind = kind
        self.item = item
        self.entry: dict[str, Any] = {}
        self.assertions: list[dict[str, Any]] = []

    def condition(self, text: str) -> None:
        found = _CONDITION.match(text)
        if found is None:
            self.item.approximate(f"condition {text!r} not read")
            return
        left, op, right = found.groups()
        if not self._mapped(left, op, right):
            self.item.approximate(f"condition {text!r} has no Upwatch equivalent, left out")

    def _mapped(self, left: str, op: str, right: str) -> bool:
        if left == "[CONNECTED]":
            return op == "==" and right == "true"  # every check needs a connection
        if left == "[STATUS]" and self.kind == "http":
            return self._status(op, right)
        if left == "[RESPONSE_TIME]" and self.kind == "http" and op in _ORDERING:
            self.assertions.append(
                {"source": "responseTime", "operator": _ORDERING[op], "value": _value(right)}
            )
            return True
        if left == "[CERTIFICATE_EXPIRATION]" and op in (">", ">="):
            hours = seconds(right)
            if hours is None or self.kind not in ("http", "tls", "grpc", "websocket"):
                return False
            days = max(1, min(365, math.ceil(hours / 86_400)))
            self.entry["certificateWarningDays"] = [days]
            self.item.approximate(
                f"certificate expiry {right}: a warning incident under {days} day(s) left, "
                "not a failed check"
            )
            return True
        if left == "[DNS_RCODE]":
            return self.kind == "dns" and op == "==" and right == "NOERROR"
        if left == "[BODY]" and self.kind == "dns" and op == "==" and "(" not in right:
            self.entry["expectedValue"] = right
            return True
        if self.kind != "http":
            return False
        if left == "[BODY]" and op in ("==", "!="):
            return self._compare("body", None, op, right)
        if left.startswith("[BODY]."):
            return self._compare("json", "$." + left.removeprefix("[BODY]."), op, right)
        has = re.fullmatch(r"has\(\[BODY\]\.(.+)\)", left)
        if has is not None and op == "==" and right in ("true", "false"):
            operator = "exists" if right == "true" else "notExists"
            path = "$." + has.group(1)
            self.assertions.append({"source": "json", "operator": operator, "path": path})
            return True
        return False

    def _status(self, op: str, right: str) -> bool:
        listed = re.fullmatch(r"any\((.+)\)", right)
        codes = [c.strip() for c in (listed.group(1).split(",") if listed else [right])]
        if op == "==" and all(c.isdigit() for c in codes):
            self.entry["expectedStatusCodes"] = [int(c) for c in codes]
            return True
        if op in _ORDERING and right.isdigit():
            self.assertions.append(
                {"source": "statusCode", "operator": _ORDERING[op], "value": int(right)}
            )
            within = {n for n in range(200, 400) if _holds(n, op, int(right))}
            if len(within) < 200:
                self.item.approximate(f"[STATUS] {op} {right} is checked besides Upwatch's 200-399")
            return True
        return False

    def _compare(self, source: str, path: str | None, op: str, right: str) -> bool:
        if right.startswith("[") or "len(" in right:
            return False
        pattern = re.fullmatch(r"pat\((.*)\)", right)
        listed = re.fullmatch(r"any\((.*)\)", right)
        if pattern is not None:
            if op != "==":
                return False
            # Gatus's patterns are shell globs: the same text as a regular expression.
            regex = fnmatch.translate(pattern.group(1))
            made: dict[str, Any] = {"source": source, "operator": "matches", "value": regex}
        elif listed is not None:
            if op != "==":
                return False
            choices = "|".join(re.escape(c.strip()) for c in listed.group(1).split(","))
            made = {"source": source, "operator": "matches", "value": f"^(?:{choices})$"}
        elif op in ("==", "!="):
            value = _value(right) if source == "json" else right
            made = {"source": source, "operator": "equals" if op == "==" else "notEquals"}
            made["value"] = value
        elif source == "json":
            made = {"source": source, "operator": _ORDERING[op], "value": _value(right)}
        else:
            return False
        if path is not None:
            made["path"] = path
        self.assertions.append(made)
        return True


def _holds(n: int, op: str, bound: int) -> bool:
    return {"<": n < bound, "<=": n <= bound, ">": n > bound, ">=": n >= bound}[op]


def _target(endpoint: dict[str, Any], item: Item) -> _Monitor | None:
    """The monitor type and target of an endpoint, by its URL's scheme."""
    url = str(endpoint.get("url") or "")
    if endpoint.get("dns"):
        dns = endpoint["dns"]
        monitor = _Monitor("dns", item)
        monitor.entry.update(host=str(dns.get("query-name", "")))
        monitor.entry["recordType"] = str(dns.get("query-type") or "A").upper()
        item.approximate(f"asked through Upwatch's resolver, not the server {url}")
        return monitor
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        monitor = _Monitor("http", item)
        monitor.entry["url"] = url
        return monitor
    if scheme in ("ws", "wss"):
        monitor = _Monitor("websocket", item)
        monitor.entry["url"] = url
        return monitor
    if scheme == "icmp":
        monitor = _Monitor("ping", item)
        monitor.entry["host"] = parts.hostname or ""
        return monitor
    ports = {"tcp": "tcp", "udp": "udp", "grpc": "grpc", "grpcs": "grpc", "tls": "tls"}
    if scheme in ports:
        monitor = _Monitor(ports[scheme], item)
        monitor.entry["host"] = parts.hostname or ""
        if parts.port is not None:
            monitor.entry["port"] = parts.port
        if scheme in ("grpc", "grpcs"):
            monitor.entry["tls"] = scheme == "grpcs"
        return monitor
    item.skip(f"{scheme or 'this'}:// endpoints have no Upwatch monitor type")
    return None


def _interval(endpoint: dict[str, Any], monitor: _Monitor) -> None:
    given = endpoint.get("interval", "60s")
    interval = seconds(given)
    if interval is None:
        monitor.item.approximate(f"interval {given!r} not read: Upwatch's default")
        return
    kept = max(10, min(86_400, round(interval)))
    if kept != interval:
        monitor.item.approximate(f"interval {given} is {kept} s (Upwatch's bounds)")
    monitor.entry["intervalSeconds"] = kept
    timeout = seconds((endpoint.get("client") or {}).get("timeout", ""))
    if timeout is not None:
        monitor.entry["timeoutSeconds"] = max(0.1, min(60.0, timeout))


def _alerts(endpoint: dict[str, Any], monitor: _Monitor, providers: dict[str, str]) -> None:
    alerts = [a for a in endpoint.get("alerts") or [] if a.get("enabled", True)]
    if not alerts:
        monitor.item.approximate("no alerts in Gatus: Upwatch alerts every provider")
        return
    failures = min(int(a.get("failure-threshold", 3)) for a in alerts)
    successes = min(int(a.get("success-threshold", 2)) for a in alerts)
    monitor.entry["retries"] = max(0, min(10, failures - 1))
    monitor.entry["successThreshold"] = max(1, min(20, successes))
    types = sorted({str(a.get("type")) for a in alerts})
    others = sorted(set(providers) - set(types))
    if others:
        monitor.item.approximate(
            f"alerts {', '.join(types)}: Upwatch alerts every provider (also "
            f"{', '.join(providers[t] for t in others)})"
        )


def _monitor(
    imported: Imported, endpoint: dict[str, Any], providers: dict[str, str]
) -> tuple[str, str | None] | None:
    name = str(endpoint.get("name") or "")
    group = endpoint.get("group")
    shown = f"{group}/{name}" if group else name
    item = imported.item(KIND, shown)
    monitor = _target(endpoint, item)
    if monitor is None:
        return None
    key = imported.key("monitors", f"{group}-{name}" if group else name)
    entry = {"key": key, "name": name, "type": monitor.kind, **monitor.entry}
    monitor.entry = entry
    if endpoint.get("enabled") is False:
        entry["isActive"] = False
    _interval(endpoint, monitor)
    if monitor.kind == "http":
        entry["method"] = str(endpoint.get("method") or "GET").upper()
        body = endpoint.get("body")
        if body:
            if endpoint.get("graphql"):
                body = '{"query": ' + json.dumps(str(body)) + "}"
            entry["body"] = str(body)
        headers = dict(endpoint.get("headers") or {})
        entry["url"], basic = without_credentials(entry["url"])
        if basic is not None:
            headers.setdefault("Authorization", basic)
        entry.update(monitor_headers(imported, item, key, headers))
    elif monitor.kind in ("udp", "websocket") and endpoint.get("body"):
        entry["payload" if monitor.kind == "udp" else "message"] = str(endpoint["body"])
    elif endpoint.get("body") or endpoint.get("headers"):
        item.approximate(f"body and headers not used by a {monitor.kind} monitor")
    for condition in endpoint.get("conditions") or []:
        monitor.condition(str(condition))
    if monitor.assertions:
        entry["assertions"] = monitor.assertions
    _alerts(endpoint, monitor, providers)
    imported.add("monitors", entry, item)
    return key, group


# ---- alerting providers --------------------------------------------------------------------

# Gatus's provider → Upwatch's channel, and each config field: (Gatus's, Upwatch's, secret).
PROVIDERS: Final[dict[str, tuple[str, list[tuple[str, str, bool]]]]] = {
    "slack": ("slack", [("webhook-url", "webhookUrl", True)]),
    "discord": ("discord", [("webhook-url", "webhookUrl", True)]),
    "teams": ("teams", [("webhook-url", "webhookUrl", True)]),
    "teams-workflows": ("teams", [("webhook-url", "webhookUrl", True)]),
    "googlechat": ("googlechat", [("webhook-url", "webhookUrl", True)]),
    "mattermost": ("mattermost", [("webhook-url", "webhookUrl", True)]),
    "rocketchat": ("rocketchat", [("webhook-url", "webhookUrl", True)]),
    "telegram": ("telegram", [("token", "botToken", True), ("id", "chatId", False)]),
    "pagerduty": ("pagerduty", [("integration-key", "routingKey", True)]),
    "opsgenie": ("opsgenie", [("api-key", "apiKey", True)]),
    "gotify": ("gotify", [("server-url", "serverUrl", False), ("token", "appToken", True)]),
    "pushover": (
        "pushover",
        [("user-key", "userKey", False), ("application-token", "appToken", True)],
    ),
    "matrix": (
        "matrix",
        [
            ("server-url", "homeserverUrl", False),
            ("internal-room-id", "roomId", False),
            ("access-token", "accessToken", True),
        ],
    ),
    "ntfy": (
        "ntfy",
        [("url", "serverUrl", False), ("topic", "topic", False), ("token", "accessToken", True)],
    ),
    "twilio": (
        "sms",
        [
            ("sid", "accountSid", False),
            ("token", "authToken", True),
            ("from", "from_", False),
            ("to", "to", False),
        ],
    ),
}


def _provider(imported: Imported, name: str, given: Any) -> str | None:
    """The provider's key, or None when it is skipped."""
    item = imported.item("alerting provider", name)
    if not isinstance(given, dict):
        item.skip("not a mapping")
        return None
    if given.get("overrides"):
        item.approximate("group overrides left out: one provider for every monitor")
    if name == "email":
        to = [a.strip() for a in str(given.get("to", "")).split(",") if a.strip()]
        key = imported.key("providers", name)
        item.approximate("sent by Upwatch's own mail server, not the configured one")
        entry = {"key": key, "type": "email", "name": "E-mail", "config": {"to": to}}
        imported.add("providers", entry, item)
        return key
    if name == "custom":
        key = imported.key("providers", name)
        config: dict[str, Any] = {
            "url": imported.secret(item, "providers", key, "url", str(given.get("url", "")))
        }
        item.approximate("Upwatch sends its own JSON payload: method and body left out")
        imported.add(
            "providers", {"key": key, "type": "webhook", "name": "Custom", "config": config}, item
        )
        return key
    if name not in PROVIDERS:
        item.skip("no Upwatch channel of this kind")
        return None
    channel, fields = PROVIDERS[name]
    key = imported.key("providers", name)
    config = {}
    for theirs, ours, secret in fields:
        if theirs not in given:
            continue
        value = str(given[theirs])
        config[ours] = imported.secret(item, "providers", key, ours, value) if secret else value
    label = name.replace("-", " ").title()
    imported.add("providers", {"key": key, "type": channel, "name": label, "config": config}, item)
    return key


# ---- maintenance ---------------------------------------------------------------------------


def _window(
    imported: Imported, title: str, given: Any, monitors: list[str] | None, item: Item
) -> None:
    if not isinstance(given, dict) or given.get("enabled") is False:
        item.skip("disabled" if isinstance(given, dict) else "not a mapping")
        return
    start = re.fullmatch(r"(\d{1,2}):(\d{2})", str(given.get("start", "")))
    length = seconds(given.get("duration", ""))
    zone = str(given.get("timezone") or "UTC")
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        item.skip(f"unknown time zone {zone!r}")
        return
    if start is None or not length:
        item.skip("needs start (hh:mm) and duration")
        return
    begins = datetime.fromisoformat(f"{FIRST_DAY}T{int(start[1]):02d}:{start[2]}").replace(
        tzinfo=tz
    )
    ends = begins.timestamp() + length
    days = [DAYS.get(str(d).lower()) for d in given.get("every") or []]
    if None in days:
        item.skip(f"unknown day in every: {given.get('every')}")
        return
    rule = f"FREQ=WEEKLY;BYDAY={','.join(d for d in days if d)}" if days else "FREQ=DAILY"
    entry: dict[str, Any] = {
        "key": imported.key("maintenance", title),
        "title": title,
        "startsAt": _utc(begins.timestamp()),
        "endsAt": _utc(ends),
        "rrule": rule,
        "timezone": zone,
    }
    if monitors is not None:
        entry["monitors"] = monitors
    imported.add("maintenance", entry, item)


def _utc(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat().replace("+00:00", "Z")


# ---- the file ------------------------------------------------------------------------------


def read(paths: Sequence[Path]) -> Imported:
    config = read_yaml(paths[0], EXPECTS)
    if not isinstance(config, dict) or not isinstance(config.get("endpoints"), list):
        raise SourceError(f"{paths[0]}: no `endpoints` list; expected {EXPECTS}")
    imported = Imported("Gatus")
    providers: dict[str, str] = {}
    for name, given in (config.get("alerting") or {}).items():
        key = _provider(imported, str(name), given)
        if key is not None:
            providers[str(name)] = key
    components: list[dict[str, Any]] = []
    for endpoint in config["endpoints"]:
        if not isinstance(endpoint, dict):
            raise SourceError(f"{paths[0]}: an endpoint is not a mapping; expected {EXPECTS}")
        made = _monitor(imported, endpoint, providers)
        if made is None:
            continue
        key, group = made
        component: dict[str, Any] = {"monitor": key, "name": str(endpoint.get("name"))[:100]}
        if group:
            component["group"] = str(group)[:100]
        components.append(component)
        for n, window in enumerate(endpoint.get("maintenance-windows") or [], start=1):
            title = f"{endpoint.get('name')} maintenance {n}"
            _window(imported, title, window, [key], imported.item("maintenance window", title))
    for name in config:
        if name == "external-endpoints":
            for external in config[name] or []:
                item = imported.item("external endpoint", str(external.get("name")))
                item.skip("results pushed to Gatus: make it an Upwatch heartbeat monitor")
        elif name == "suites":
            for suite in config[name] or []:
                imported.item("suite", str(suite.get("name"))).skip("no Upwatch equivalent")
    if config.get("maintenance"):
        title = "Maintenance"
        item = imported.item("maintenance", "every endpoint")
        _window(imported, title, config["maintenance"], None, item)
    if components:
        title = str((config.get("ui") or {}).get("title") or "Health Dashboard | Gatus")
        item = imported.item("dashboard", title)
        item.approximate("a status page of every endpoint, grouped as in Gatus")
        page = {
            "key": imported.key("statusPages", "gatus"),
            "name": title[:100],
            "slug": "gatus",
            "components": components,
        }
        imported.add("statusPages", page, item)
    return imported


SOURCE = Source(name="gatus", label="Gatus", expects=EXPECTS, read=read)
