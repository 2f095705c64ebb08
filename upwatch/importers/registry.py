"""The sources: each module of this package that declares ``SOURCE``."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from upwatch.importers.source import Source

# Modules that are no source (the command imports this registry).
_NOT_SOURCES: Final = frozenset({"registry", "command"})


def _discovered() -> list[Source]:
    found = []
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name in _NOT_SOURCES:
            continue
        imported = importlib.import_module(f"{__package__}.{module.name}")
        source = getattr(imported, "SOURCE", None)
        if isinstance(source, Source):
            found.append(source)
    return found


SOURCES: Final[Mapping[str, Source]] = {
    source.name: source for source in sorted(_discovered(), key=lambda s: s.name)
}
