"""The monitor types: every module of this package that declares a ``KIND`` (``kind.py``),
collected in their ``rank`` order. Nothing lists them by hand, so a new type is a new module."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from upwatch.probes.kind import MonitorKind
from upwatch.probes.probe import Probe


def _declared() -> list[MonitorKind]:
    package = importlib.import_module(__package__ or "upwatch.probes")
    found = []
    for module in pkgutil.iter_modules(package.__path__):
        kind = getattr(importlib.import_module(f"{package.__name__}.{module.name}"), "KIND", None)
        if isinstance(kind, MonitorKind):
            found.append(kind)
    ranks = [kind.rank for kind in found]
    if len(set(ranks)) != len(ranks):
        raise RuntimeError(f"two monitor types share a rank: {sorted(ranks)}")
    return sorted(found, key=lambda kind: kind.rank)


KINDS: Mapping[str, MonitorKind] = MappingProxyType({kind.name: kind for kind in _declared()})
PROBES: Mapping[str, Probe] = MappingProxyType({name: kind.probe for name, kind in KINDS.items()})

# The names as a type, for schemas (the API's `type` enum, in rank order).
if TYPE_CHECKING:
    MonitorType = str
else:
    MonitorType = Literal[tuple(KINDS)]


class UnknownMonitorType(ValueError):
    """No probe is registered for the type: a monitor row the code does not know."""


def kind_of(monitor_type: str) -> MonitorKind:
    try:
        return KINDS[monitor_type]
    except KeyError:
        raise UnknownMonitorType(f"unknown monitor type {monitor_type!r}") from None


def probe_for(monitor_type: str) -> Probe:
    return kind_of(monitor_type).probe
