"""What ``upwatch apply`` will do: the file's objects against the service's, by key.

Pure: the caller gives the service's objects (as the API lists them) and a way to check a
secret against its stored digest. A field the file leaves out is left as the service has it;
an object without a key is never touched; ``prune`` deletes keyed objects the file no longer
has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from pydantic import ValidationError

from upwatch.client.document import resolved, secret_refs
from upwatch.notifications.channels import REGISTRY, mask_value, validate_config
from upwatch.notifications.channels.base import MASK

Action = Literal["create", "update", "replace", "delete", "unchanged"]
# Singular names, in the order objects are created (deleted in reverse).
KIND_NAMES: Final = {
    "providers": "provider",
    "monitors": "monitor",
    "statusPages": "status page",
    "maintenance": "maintenance window",
}
TIME_FIELDS: Final = {"startsAt", "endsAt"}
# Sent to the service separately from the entry's own fields.
REFERENCES: Final = {"key", "dependsOn", "monitors", "components"}
# The field whose values may be secrets given by reference, per kind.
SECRET_HOLDERS: Final = {"monitors": "headers", "providers": "config"}

Verifier = Callable[[str, str], bool]  # (digest, value) -> the value is the one digested


@dataclass
class Change:
    action: Action
    kind: str
    key: str
    fields: list[str] = field(default_factory=list)
    entry: dict[str, Any] | None = None  # as the file gives it
    current: dict[str, Any] | None = None  # as the service has it

    @property
    def label(self) -> str:
        return f"{KIND_NAMES[self.kind]} {self.key}"


@dataclass
class Plan:
    changes: list[Change]

    def count(self, action: Action) -> int:
        return sum(1 for change in self.changes if change.action == action)

    @property
    def empty(self) -> bool:
        return all(change.action == "unchanged" for change in self.changes)

    def summary(self) -> str:
        return (
            f"Plan: {self.count('create')} to create, {self.count('update')} to update, "
            f"{self.count('replace')} to replace, {self.count('delete')} to delete, "
            f"{self.count('unchanged')} unchanged."
        )


def _normal(value: Any) -> Any:
    """Values as compared: numbers by value, objects without their null members."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Mapping):
        return {k: _normal(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _same(wanted: Any, have: Any) -> bool:
    if isinstance(wanted, str) and isinstance(have, str) and MASK in have:
        # A secret written as its mask (an export of a secret given without a reference) is
        # the stored one, as the API itself reads a mask sent back.
        return wanted == have or mask_value(wanted) == have
    if isinstance(wanted, Mapping) and isinstance(have, Mapping):
        wanted_keys = {k for k, v in wanted.items() if v is not None}
        have_keys = {k for k, v in have.items() if v is not None}
        return wanted_keys == have_keys and all(_same(wanted[k], have[k]) for k in wanted_keys)
    if isinstance(wanted, list) and isinstance(have, list):
        return len(wanted) == len(have) and all(
            _same(a, b) for a, b in zip(wanted, have, strict=True)
        )
    return bool(_normal(wanted) == _normal(have))


def _instant(value: Any) -> datetime | None:
    """To the second, as the service keeps a window's times."""
    try:
        return datetime.fromisoformat(str(value)).replace(microsecond=0)
    except ValueError:
        return None


def _secrets_match(
    entry: Mapping[str, Any],
    current: Mapping[str, Any],
    environment: Mapping[str, str],
    verify: Verifier,
) -> dict[str, bool]:
    """For each secret the entry gives by reference: whether the service holds that value
    under that reference."""
    stored = current.get("secretRefs") or {}
    result: dict[str, bool] = {}
    for path, name in secret_refs(entry).items():
        ref = stored.get(path) or {}
        result[path] = ref.get("env") == name and verify(str(ref.get("digest")), environment[name])
    return result


def _with_secrets_as_stored(
    value: Any, path: str, matched: Mapping[str, bool], current: Any
) -> Any:
    """``value`` where each matched secret is the service's masked value, so it compares
    equal, and each changed one a marker that never does."""
    if path in matched:
        return current if matched[path] else object()
    if isinstance(value, dict):
        have = current if isinstance(current, Mapping) else {}
        return {
            k: _with_secrets_as_stored(v, f"{path}.{k}" if path else k, matched, have.get(k))
            for k, v in value.items()
        }
    return value


def _as_stored(channel: str, config: dict[str, Any]) -> dict[str, Any]:
    """A provider's config as the service keeps it: its type's model, defaults filled in."""
    try:
        return validate_config(channel, config)
    except ValidationError:
        # A masked secret (an export's) fails its field's format; the rest is taken as given.
        model = REGISTRY[channel].config_model.model_construct(**config)
        return model.model_dump(mode="json", by_alias=True, exclude_none=True, warnings=False)


def changed_fields(
    kind: str,
    entry: Mapping[str, Any],
    current: Mapping[str, Any],
    keys_by_id: Mapping[str, str | None],
    environment: Mapping[str, str],
    verify: Verifier,
) -> list[str]:
    """The entry's fields whose value the service does not hold."""
    matched = _secrets_match(entry, current, environment, verify)
    wanted = _with_secrets_as_stored(dict(entry), "", matched, current)
    changed: list[str] = []
    for name, value in wanted.items():
        if name in ("key", "components"):
            continue
        if kind == "providers" and name == "config":
            # The service keeps a config as its type's model gives it (defaults filled in).
            config = resolved(entry["config"], lambda env: environment[env])
            stored_form = _as_stored(str(entry["type"]), config)
            value = _with_secrets_as_stored(stored_form, "config", matched, current.get("config"))
        if name in ("dependsOn", "monitors"):
            ids = current.get("dependsOn" if name == "dependsOn" else "monitorIds")
            have: Any = None if ids is None else sorted(str(keys_by_id.get(i)) for i in ids)
            same = (value is None and have is None) or (
                value is not None and have is not None and sorted(value) == have
            )
        elif name in TIME_FIELDS:
            same = _instant(value) == _instant(current.get(name))
        else:
            same = _same(value, current.get(name))
        if not same:
            changed.append(name)
    holder = SECRET_HOLDERS.get(kind)
    if holder in entry:
        stored = {p: r.get("env") for p, r in (current.get("secretRefs") or {}).items()}
        if secret_refs(entry) != stored and holder not in changed:
            changed.append("secretRefs")
    return changed


def component_changes(
    entry: Mapping[str, Any], current: Mapping[str, Any], keys_by_id: Mapping[str, str | None]
) -> list[str]:
    """What differs in a page's components (they are matched by their monitor's key)."""
    wanted = entry.get("components")
    if wanted is None:
        return []
    have = {keys_by_id.get(c["monitorId"]): c for c in current.get("components") or []}
    group_names = {g["id"]: g["name"] for g in current.get("groups") or []}
    differences = []
    for order, component in enumerate(wanted):
        present = have.get(component["monitor"])
        if present is None:
            differences.append(f"components[{component['monitor']}]: add")
            continue
        fields = [
            name
            for name in ("name", "description")
            if name in component and component[name] != present.get(name)
        ]
        if present.get("order") != order:
            fields.append("order")
        if component.get("group") != group_names.get(present.get("groupId") or ""):
            fields.append("group")
        if fields:
            differences.append(f"components[{component['monitor']}]: {', '.join(fields)}")
    for key in set(have) - {c["monitor"] for c in wanted}:
        differences.append(f"components[{key}]: remove")
    named = {c.get("group") for c in wanted}
    for name in group_names.values():
        if name not in named:
            differences.append(f"groups[{name}]: remove")
    return differences


def plan(
    desired: Mapping[str, list[dict[str, Any]]],
    current: Mapping[str, list[dict[str, Any]]],
    *,
    prune: bool,
    environment: Mapping[str, str],
    verify: Verifier,
) -> Plan:
    keys_by_id = {m["id"]: m.get("key") for m in current.get("monitors", [])}
    changes: list[Change] = []
    for kind in KIND_NAMES:
        have = {obj["key"]: obj for obj in current.get(kind, []) if obj.get("key")}
        for entry in desired.get(kind, []):
            existing = have.get(entry["key"])
            if existing is None:
                changes.append(Change("create", kind, entry["key"], entry=entry))
                continue
            if kind == "monitors" and existing.get("type") != entry.get("type"):
                change = Change("replace", kind, entry["key"], ["type"], entry, existing)
                changes.append(change)
                continue
            fields = changed_fields(kind, entry, existing, keys_by_id, environment, verify)
            if kind == "statusPages":
                fields += component_changes(entry, existing, keys_by_id)
            action: Action = "update" if fields else "unchanged"
            changes.append(Change(action, kind, entry["key"], fields, entry, existing))
        if prune:
            given = {entry["key"] for entry in desired.get(kind, [])}
            changes += [
                Change("delete", kind, key, current=obj)
                for key, obj in have.items()
                if key not in given
            ]
    return Plan(changes)
