"""``upwatch apply`` and ``upwatch export``: a project as a file, and the file made true."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import yaml
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from upwatch.client.document import ConfigFile, entries, resolved, secret_refs
from upwatch.client.plan import KIND_NAMES, SECRET_HOLDERS, Change, Plan, plan
from upwatch.client.service import Service
from upwatch.probes.registry import KINDS

# What the monitor types check (url, host, port): a change of one is a new destination.
TARGETS: Final = {name for kind in KINDS.values() for name in kind.targets}

PATHS: Final = {
    "providers": "/notification-providers",
    "monitors": "/monitors",
    "statusPages": "/status-pages",
    "maintenance": "/maintenance-windows",
}
LIST_PATHS: Final = {**PATHS, "providers": "/notification-providers/user"}
_HASHER: Final = PasswordHasher()

Report = Callable[[str], None]


def verify(digest: str, value: str) -> bool:
    try:
        return _HASHER.verify(digest, value)
    except (VerificationError, InvalidHashError):
        return False


def current_state(service: Service) -> dict[str, list[dict[str, Any]]]:
    """The project's objects of every kind, as the API lists them."""
    project = service.project_id
    return {kind: service.listed(LIST_PATHS[kind], projectId=project) for kind in PATHS}


def make_plan(
    config: ConfigFile, current: Mapping[str, list[dict[str, Any]]], *, prune: bool
) -> Plan:
    desired = {kind: entries(config, kind) for kind in PATHS}
    return plan(desired, current, prune=prune, environment=os.environ, verify=verify)


def describe(change: Change) -> str:
    mark = {"create": "+", "update": "~", "replace": "-/+", "delete": "-", "unchanged": "="}
    text = f"{mark[change.action]:>3} {change.label}: {change.action}"
    if change.action in ("update", "replace"):
        text += f" ({', '.join(change.fields)})"
    return text


class Applier:
    """Carries out a plan in order: providers, monitors, pages and their components, windows;
    deletions last, in reverse."""

    def __init__(self, service: Service, report: Report) -> None:
        self.service = service
        self.report = report
        self.ids: dict[str, dict[str, str]] = {kind: {} for kind in PATHS}
        # Monitors whose dependsOn is set once every monitor of the file exists.
        self.later: list[tuple[str, list[str]]] = []

    def run(self, plan: Plan, current: Mapping[str, list[dict[str, Any]]]) -> None:
        for kind in PATHS:
            for obj in current.get(kind, []):
                if obj.get("key"):
                    self.ids[kind][obj["key"]] = obj["id"]
        for change in [c for c in plan.changes if c.action == "replace"]:
            self._delete(change)
        for kind in PATHS:
            for change in plan.changes:
                if change.kind == kind and change.action in ("create", "update", "replace"):
                    self._write(change)
            if kind == "monitors":
                for monitor_id, keys in self.later:
                    ids = [self.ids["monitors"][key] for key in keys]
                    self.service.call("PATCH", f"/monitors/{monitor_id}", json={"dependsOn": ids})
        for kind in reversed(PATHS):
            for change in plan.changes:
                if change.kind == kind and change.action == "delete":
                    self._delete(change)

    def _body(self, change: Change, fields: list[str] | None) -> dict[str, Any]:
        assert change.entry is not None
        entry = change.entry
        body = {
            name: resolved(value, lambda env: os.environ[env])
            for name, value in entry.items()
            if name not in ("components", "monitors", "dependsOn")
            and (fields is None or name in fields or name == "key")
        }
        holder = SECRET_HOLDERS.get(change.kind)
        # A new destination needs its secrets given again (the API keeps a masked one only
        # for the same destination), so they go with it.
        moving = change.kind == "monitors" and bool(TARGETS & set(fields or []))
        # A type's own secret (a password) changed: its reference goes with it.
        own_secret = change.kind == "monitors" and bool(
            set(KINDS[entry["type"]].secrets) & set(fields or [])
        )
        if holder and (
            fields is None or holder in fields or "secretRefs" in fields or moving or own_secret
        ):
            body["secretRefs"] = secret_refs(entry)
            if holder in entry:
                body[holder] = resolved(entry[holder], lambda env: os.environ[env])
            if change.kind == "providers":
                body["type"] = entry["type"]  # a config is read against its type
        sending_monitors = fields is None or "monitors" in fields
        if change.kind == "maintenance" and "monitors" in entry and sending_monitors:
            keys = entry["monitors"]
            body["monitorIds"] = None if keys is None else [self.ids["monitors"][k] for k in keys]
        return body

    def _write(self, change: Change) -> None:
        assert change.entry is not None
        path = PATHS[change.kind]
        creating = change.action in ("create", "replace")
        body = self._body(change, None if creating else change.fields)
        if creating:
            body["projectId"] = self.service.project_id
            made = self.service.call("POST", path, json=body)
            object_id = str(made["id"])
            self.ids[change.kind][change.key] = object_id
            self.report(f"{change.label}: created")
        else:
            assert change.current is not None
            object_id = str(change.current["id"])
            body.pop("key", None)
            if body:
                self.service.call("PATCH", f"{path}/{object_id}", json=body)
            self.report(f"{change.label}: updated ({', '.join(change.fields)})")
        depends = change.entry.get("dependsOn")
        setting_parents = creating or "dependsOn" in change.fields
        if change.kind == "monitors" and depends is not None and setting_parents:
            self.later.append((object_id, depends))
        if change.kind == "statusPages":
            self._components(object_id, change)

    def _components(self, page_id: str, change: Change) -> None:
        assert change.entry is not None
        wanted = change.entry.get("components")
        if wanted is None:
            return
        # Read again: a monitor replaced a moment ago took its component with it.
        page = self.service.call("GET", f"/status-pages/{page_id}")
        by_monitor = {c["monitorId"]: c for c in page.get("components") or []}
        ids = self.ids["monitors"]
        keep = {ids[c["monitor"]] for c in wanted}
        base = f"/status-pages/{page_id}/components"
        for monitor_id, component in by_monitor.items():
            if monitor_id not in keep:
                self.service.call("DELETE", f"{base}/{component['id']}")
        group_ids = self._groups(page, wanted)
        for order, component in enumerate(wanted):
            fields = {k: v for k, v in component.items() if k in ("name", "description")}
            group_id = group_ids.get(component.get("group") or "")
            present = by_monitor.get(ids[component["monitor"]])
            if present is None:
                body = {"monitorId": ids[component["monitor"]], "order": order, **fields}
                self.service.call("POST", base, json=body | {"groupId": group_id})
                continue
            update = {k: v for k, v in fields.items() if present.get(k) != v}
            if present.get("order") != order:
                update["order"] = order
            if present.get("groupId") != group_id:
                update["groupId"] = group_id
            if update:
                self.service.call("PATCH", f"{base}/{present['id']}", json=update)
        for group in page.get("groups") or []:
            if group["name"] not in group_ids:
                # Last: its members have moved out or away by now.
                self.service.call("DELETE", f"/status-pages/{page['id']}/groups/{group['id']}")

    def _groups(self, page: Mapping[str, Any], wanted: list[dict[str, Any]]) -> dict[str, str]:
        """The groups the file's components name, each made or moved to where its first
        member is; their ids by name."""
        first: dict[str, int] = {}
        for order, component in enumerate(wanted):
            if component.get("group"):
                first.setdefault(component["group"], order)
        have = {g["name"]: g for g in page.get("groups") or []}
        base = f"/status-pages/{page['id']}/groups"
        ids: dict[str, str] = {}
        for name, order in first.items():
            group = have.get(name)
            if group is None:
                group = self.service.call("POST", base, json={"name": name, "order": order})
            elif group.get("order") != order:
                self.service.call("PATCH", f"{base}/{group['id']}", json={"order": order})
            ids[name] = str(group["id"])
        return ids

    def _delete(self, change: Change) -> None:
        assert change.current is not None
        self.service.call("DELETE", f"{PATHS[change.kind]}/{change.current['id']}")
        self.report(f"{change.label}: deleted")


# ---- export ------------------------------------------------------------------------------

# Every monitor's fields; then those of its type, as the type declares them (probes/).
MONITOR_FIELDS: Final = [
    "name",
    "type",
    "intervalSeconds",
    "timeoutSeconds",
    "retries",
    "degradedThresholdMs",
    "quorum",
    "successThreshold",
    "alertOnDegraded",
    "baselineFactor",
    "baselineMinSamples",
    "certificateWarningDays",
    "isActive",
]
PROVIDER_FIELDS: Final = [
    "name",
    "type",
    "isEnabled",
    "quietHoursStart",
    "quietHoursEnd",
    "repeatEveryMinutes",
    "config",
]
PAGE_FIELDS: Final = [
    "name",
    "slug",
    "description",
    "isPublic",
    "visibility",
    "allowedNetworks",
    "theme",
    "customDomain",
    "customCss",
    "customJs",
    "timeZone",
    "language",
    "visitorLanguage",
]
WINDOW_FIELDS: Final = ["title", "startsAt", "endsAt", "rrule", "timezone"]


def _shown(value: Any) -> bool:
    return value is not None and value != [] and value != {} and value != ""


def _with_references(value: Any, refs: Mapping[str, Any], path: str) -> Any:
    """``value`` with each secret the service holds by reference written as ``{env: NAME}``."""
    if path in refs:
        return {"env": refs[path]["env"]}
    if isinstance(value, dict):
        return {k: _with_references(v, refs, f"{path}.{k}") for k, v in value.items()}
    return value


def exported(current: Mapping[str, list[dict[str, Any]]], warn: Report) -> dict[str, Any]:
    """The project's keyed objects as a config file; what cannot be written is named."""
    keys = {m["id"]: m.get("key") for m in current["monitors"]}
    document: dict[str, Any] = {"version": 1}
    unkeyed = dict.fromkeys(PATHS, 0)
    for kind in ("monitors", "providers", "statusPages", "maintenance"):
        items: list[dict[str, Any]] = []
        for obj in current[kind]:
            if not obj.get("key"):
                unkeyed[kind] += 1
                continue
            items.append(_exported(kind, obj, keys, warn))
        document[kind] = items
    for kind, count in unkeyed.items():
        if count:
            warn(
                f"{count} {KIND_NAMES[kind]}(s) without a key left out "
                "(`upwatch export --adopt` gives them one)"
            )
    return document


def _exported(
    kind: str, obj: Mapping[str, Any], keys: Mapping[str, str | None], warn: Report
) -> dict[str, Any]:
    refs = obj.get("secretRefs") or {}
    entry: dict[str, Any] = {"key": obj["key"]}
    label = f"{KIND_NAMES[kind]} {obj['key']}"
    if kind == "monitors":
        monitor_type = KINDS.get(str(obj["type"]))
        names = MONITOR_FIELDS + list(monitor_type.fields if monitor_type is not None else ())
        entry.update({n: _with_references(obj[n], refs, n) for n in names if _shown(obj.get(n))})
        if "headers" in entry:
            entry["headers"] = _with_references(entry["headers"], refs, "headers")
        secret = set(monitor_type.secrets if monitor_type is not None else ())
        if monitor_type is not None and monitor_type.url_password_secret:
            secret.add("url")
        for name in sorted(secret & set(entry)):
            if not isinstance(entry[name], dict):
                # The service shows it masked: written as is, it would be stored as the mask.
                warn(f"{label}: {name} holds a secret given without a variable; left out")
                del entry[name]
        if obj.get("dependsOn"):
            parents = [keys.get(i) for i in obj["dependsOn"]]
            if None in parents:
                warn(f"{label}: depends on a monitor without a key; dependsOn left out")
            else:
                entry["dependsOn"] = parents
    elif kind == "providers":
        entry.update({n: obj[n] for n in PROVIDER_FIELDS if _shown(obj.get(n))})
        entry["config"] = _with_references(obj["config"], refs, "config")
    elif kind == "statusPages":
        entry.update({n: obj[n] for n in PAGE_FIELDS if _shown(obj.get(n))})
        components = obj.get("components") or []
        if any(keys.get(c["monitorId"]) is None for c in components):
            warn(f"{label}: shows a monitor without a key; components left out")
        else:
            groups = {g["id"]: g["name"] for g in obj.get("groups") or []}
            entry["components"] = [
                {"monitor": keys[c["monitorId"]], "name": c["name"]}
                | ({"description": c["description"]} if c.get("description") else {})
                | ({"group": groups[c["groupId"]]} if c.get("groupId") in groups else {})
                for c in sorted(components, key=lambda c: c["order"])
            ]
    else:
        entry.update({n: obj[n] for n in WINDOW_FIELDS if _shown(obj.get(n))})
        if obj.get("monitorIds") is not None:
            monitors = [keys.get(i) for i in obj["monitorIds"]]
            if None in monitors:
                # Left out, `monitors` stays as the service has it when applied.
                warn(f"{label}: covers a monitor without a key; monitors left out")
            else:
                entry["monitors"] = monitors
    return entry


def adopt(service: Service, current: Mapping[str, list[dict[str, Any]]], report: Report) -> None:
    """Give every object without a key one made from its name, unique in its kind."""
    for kind, path in PATHS.items():
        taken = {obj["key"] for obj in current[kind] if obj.get("key")}
        for obj in current[kind]:
            if obj.get("key"):
                continue
            base = re.sub(r"[^a-z0-9]+", "-", str(obj.get("name") or obj.get("title")).lower())
            base = base.strip("-")[:56] or kind.lower()
            key, n = base, 2
            while key in taken:
                key, n = f"{base}-{n}", n + 1
            taken.add(key)
            service.call("PATCH", f"{path}/{obj['id']}", json={"key": key})
            obj["key"] = key
            report(f"{KIND_NAMES[kind]} {key}: key given")


def as_yaml(document: Mapping[str, Any], schema_url: str) -> str:
    header = (
        f"# yaml-language-server: $schema={schema_url}\n"
        "# Written by `upwatch export`; apply it with `upwatch apply -f FILE`.\n"
    )
    return header + yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True)
