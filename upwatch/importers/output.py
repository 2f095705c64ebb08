"""What a source module builds: the config file's entries (docs/config-as-code.md) and the
report, checked against the file's own models before anything is written.

Keys are made from the source's names (``My API`` → ``my-api``), numbered when taken, so the
same source gives the same keys every time and a second import applies as a no-op. A secret is
written as ``{env: NAME}`` with a name made from the object and the field
(``UPWATCH_IMPORT_PROVIDER_TEAM_SLACK_WEBHOOKURL``); its value is kept in memory only, to check
the entry as the API would, and never written or printed.
"""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from upwatch.client.document import FileError, checked, parse
from upwatch.importers.report import Item, Report

Kind = Literal["providers", "monitors", "statusPages", "maintenance"]
KINDS: Final[tuple[Kind, ...]] = ("providers", "monitors", "statusPages", "maintenance")
# How the report names where an object went.
TARGET_WORDS: Final[dict[Kind, str]] = {
    "providers": "provider",
    "monitors": "monitor",
    "statusPages": "status page",
    "maintenance": "maintenance window",
}
ENV_WORDS: Final[dict[Kind, str]] = {
    "providers": "PROVIDER",
    "monitors": "MONITOR",
    "statusPages": "PAGE",
    "maintenance": "MAINTENANCE",
}
# The API's problem text after its place in the file ("upwatch.yaml:3: monitors[0].").
_PLACE = re.compile(r"^[^:]*:\d+: (?:providers|monitors|statusPages|maintenance)\[\d+\]\.?")
KEY_LENGTH: Final = 64


def slug(name: str, fallback: str) -> str:
    """``name`` in a key's letters: ``a-z 0-9 . _ -``, accents folded, at most 56 long (room
    for a number)."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    made = re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")[:56].strip("-")
    return made or fallback


class Imported:
    """The entries made from one source, and its report."""

    def __init__(self, source: str) -> None:
        self.report = Report(source)
        self.entries: dict[Kind, list[tuple[dict[str, Any], Item]]] = {k: [] for k in KINDS}
        self._keys: dict[Kind, set[str]] = {k: set() for k in KINDS}
        self._secrets: dict[str, str] = {}  # variable -> value, for checking only

    def item(self, kind: str, name: str) -> Item:
        """A line of the report for one object of the source."""
        return self.report.item(kind, name)

    def key(self, kind: Kind, name: str) -> str:
        """A key not yet taken in ``kind``, made from ``name``."""
        base = slug(name, TARGET_WORDS[kind].replace(" ", "-"))
        key, n = base, 2
        while key in self._keys[kind]:
            key, n = f"{base}-{n}", n + 1
        self._keys[kind].add(key)
        return key

    def secret(self, item: Item, kind: Kind, key: str, field: str, value: str) -> dict[str, str]:
        """``{env: NAME}`` for a secret of the object ``key``; the name is listed in the
        report."""
        words = f"UPWATCH_IMPORT_{ENV_WORDS[kind]}_{key}_{field}"
        base = re.sub(r"[^A-Z0-9]+", "_", words.upper()).strip("_")
        name, n = base, 2
        while name in self._secrets:
            name, n = f"{base}_{n}", n + 1
        self._secrets[name] = value
        item.secrets.append(name)
        return {"env": name}

    def add(self, kind: Kind, entry: dict[str, Any], item: Item) -> None:
        """An entry of the file (its ``key`` from ``key()``), from the object ``item``."""
        item.target = f"{TARGET_WORDS[kind]} {entry['key']}"
        self.entries[kind].append((entry, item))

    # ---- finishing -------------------------------------------------------------------------

    def document(self) -> dict[str, Any]:
        """The config file's data: every entry the API would take. An entry it would refuse
        is skipped with the API's reason; references to skipped monitors are dropped."""
        kept: dict[Kind, list[dict[str, Any]]] = {}
        for kind in KINDS[:2]:
            kept[kind] = [e for e, item in self.entries[kind] if self._accepted(kind, e, item)]
        monitors = {entry["key"] for entry in kept["monitors"]}
        for kind in KINDS[2:]:
            kept[kind] = []
            for given, item in self.entries[kind]:
                entry = _without_missing(kind, given, item, monitors)
                if entry is not None and self._accepted(kind, entry, item, monitors):
                    kept[kind].append(entry)
        document: dict[str, Any] = {"version": 1}
        document.update({kind: kept[kind] for kind in KINDS if kept[kind]})
        try:
            checked(parse(yaml.safe_dump(document, sort_keys=False)), self._secrets)
        except FileError as exc:  # each entry passed alone: a fault of the importer itself
            raise AssertionError(f"the imported file does not check: {exc}") from None
        return document

    def _accepted(
        self,
        kind: Kind,
        entry: dict[str, Any],
        item: Item,
        monitors: set[str] | frozenset[str] = frozenset(),
    ) -> bool:
        if item.outcome == "skipped":
            return False
        # Stand-ins for the monitors an entry names, so that it is checked alone.
        stand_ins = [{"key": key, "name": key, "type": "heartbeat"} for key in sorted(monitors)]
        single = {"version": 1, "monitors": stand_ins, kind: [entry]}
        try:
            checked(parse(yaml.safe_dump(single, sort_keys=False)), self._secrets)
        except FileError as exc:
            reasons = "; ".join(_PLACE.sub("", problem) for problem in exc.problems)
            item.skip(f"Upwatch would refuse it: {reasons}")
            return False
        return True

    def secret_values(self) -> Mapping[str, str]:
        """The secrets found, by variable: what to set before applying (never printed)."""
        return dict(self._secrets)

    def text(self) -> str:
        """The file's text, with a header saying where it came from and what to set."""
        document = self.document()
        header = [
            f"# Imported from {self.report.source} by `upwatch import`: review it, then",
            "# `upwatch apply -f FILE` (it shows its plan first; docs/migrating.md).",
        ]
        names = [name for name, _ in self.report.secrets]
        if names:
            header.append("# Secrets come from these environment variables: " + ", ".join(names))
        body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
        return "\n".join(header) + "\n" + body


def _without_missing(
    kind: Kind, entry: dict[str, Any], item: Item, monitors: set[str]
) -> dict[str, Any] | None:
    """The entry without references to monitors that were not imported."""
    if kind == "statusPages" and entry.get("components") is not None:
        components = [c for c in entry["components"] if c["monitor"] in monitors]
        dropped = len(entry["components"]) - len(components)
        if dropped:
            item.approximate(f"{dropped} component(s) of skipped monitors left out")
        return {**entry, "components": components}
    if kind == "maintenance" and entry.get("monitors") is not None:
        named = [key for key in entry["monitors"] if key in monitors]
        if not named:
            item.skip("none of its monitors was imported")
            return None
        if len(named) < len(entry["monitors"]):
            item.approximate("monitors that were skipped left out")
        return {**entry, "monitors": named}
    return entry


def write(text: str, path: Path) -> None:
    """``text`` to ``path`` whole or not at all: written beside it, then renamed over it."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path())
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
