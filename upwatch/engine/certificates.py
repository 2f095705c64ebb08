"""Certificate warnings: which of a monitor's warning days the days left have crossed.

Pure, like the status machine beside it. What is open lives in the monitor's state under
``certificate`` as ``{"open": {"14": incident id, ...}}``: one incident per threshold, its id
chosen here so the state and the incident are written in the same transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from upwatch.probes.tls import DEFAULT_WARNING_DAYS

STATE_KEY = "certificate"


@dataclass(frozen=True)
class CertificateChange:
    """Warnings to open and to resolve after one check saw ``days`` left."""

    days: int
    not_after: str | None
    # (threshold, incident id), largest threshold first.
    opened: list[tuple[int, str]] = field(default_factory=list)
    resolved: list[tuple[int, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.opened or self.resolved)


def days_left(details: Mapping[str, object]) -> int | None:
    """``daysToExpiry`` of a check's details, if it saw a certificate (a remote worker's
    report is data: anything but an int reads as none)."""
    days = details.get("daysToExpiry")
    return days if isinstance(days, int) and not isinstance(days, bool) else None


def open_warnings(state: Mapping[str, Any] | None) -> dict[int, str]:
    """Open warnings by threshold, as the monitor's state keeps them."""
    kept = ((state or {}).get(STATE_KEY) or {}).get("open") or {}
    return {int(t): str(i) for t, i in kept.items()} if isinstance(kept, dict) else {}


def crossed(
    days: int,
    not_after: str | None,
    warning_days: Sequence[int] | None,
    state: Mapping[str, Any] | None,
    new_id: Callable[[], str],
) -> tuple[CertificateChange, dict[str, Any]]:
    """What ``days`` left changes, and the state's new ``certificate`` entry.

    A threshold is crossed while fewer than that many whole days are left (10 days left
    crosses 14, as the TLS type turns down under 14): its warning opens once and stays open
    until a check sees at least that many days again (a renewed certificate), or the
    threshold is no longer among the monitor's warning days.
    """
    thresholds = sorted(set(warning_days or DEFAULT_WARNING_DAYS), reverse=True)
    was_open = open_warnings(state)
    change = CertificateChange(days=days, not_after=not_after)
    still: dict[int, str] = {}
    for threshold, incident_id in sorted(was_open.items(), reverse=True):
        if threshold in thresholds and days < threshold:
            still[threshold] = incident_id
        else:
            change.resolved.append((threshold, incident_id))
    for threshold in thresholds:
        if days < threshold and threshold not in still:
            still[threshold] = new_id()
            change.opened.append((threshold, still[threshold]))
    entry = {"open": {str(t): i for t, i in sorted(still.items(), reverse=True)}}
    return change, entry
