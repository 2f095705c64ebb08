"""Uptime Kuma: its SQLite database (``kuma.db``, 1.x and 2.x schemas) or a 1.x JSON backup."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from upwatch.importers.output import Imported
from upwatch.importers.source import Source, SourceError

EXPECTS = "Uptime Kuma's database file (kuma.db, 1.x or 2.x) or a 1.x JSON backup"


def read(paths: Sequence[Path]) -> Imported:
    # TODO(helper B): the Kuma importer.
    raise SourceError(f"{paths[0]}: importing from Uptime Kuma is not ready yet ({EXPECTS})")


SOURCE = Source(name="kuma", label="Uptime Kuma", expects=EXPECTS, read=read)
