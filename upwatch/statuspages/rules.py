"""What a status page says, as pure functions of monitor states and day counts: a component's
status, a day's status, and the page's overall status (docs/status-pages.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

ComponentStatus = Literal[
    "operational", "degraded", "partial_outage", "major_outage", "maintenance", "unknown"
]
OverallStatus = Literal["operational", "degraded", "partial_outage", "major_outage", "maintenance"]
DayStatus = Literal["operational", "degraded", "partial_outage", "major_outage", "no_data"]

# A day with at least this uptime (and some downtime) is a partial outage; below, a major one.
PARTIAL_OUTAGE_UPTIME = 95.0


def component_status(monitor_status: str, region_statuses: Iterable[str] = ()) -> ComponentStatus:
    """A component shows its monitor's status. A monitor that is up while some of its regions
    fail (too few to make it down) is a partial outage; one that is paused or has no result
    yet is unknown, which the overall status leaves out."""
    if monitor_status == "down":
        return "major_outage"
    if monitor_status == "degraded":
        return "degraded"
    if monitor_status == "up":
        return "partial_outage" if "down" in region_statuses else "operational"
    if monitor_status == "maintenance":
        return "maintenance"
    return "unknown"


def overall_status(statuses: Iterable[ComponentStatus]) -> OverallStatus:
    """The page's banner: every known component down is a major outage, some down (or
    partly down) a partial outage, then degraded, then maintenance, else operational. Unknown
    components (paused, not checked yet) and an empty page count as operational."""
    known = [s for s in statuses if s != "unknown"]
    down = known.count("major_outage")
    if known and down == len(known):
        return "major_outage"
    if down or "partial_outage" in known:
        return "partial_outage"
    if "degraded" in known:
        return "degraded"
    if "maintenance" in known:
        return "maintenance"
    return "operational"


def day_uptime(total: int, up: int, degraded: int) -> float | None:
    """Degraded checks count as up, as in every uptime figure (monitors/statistics.py)."""
    if total <= 0:
        return None
    return round((up + degraded) / total * 100, 3)


def day_status(total: int, up: int, degraded: int, down: int) -> DayStatus:
    """A day's bar: no checks is no data; no failure is operational (degraded if any check
    was slow); failures below 5 % of the checks a partial outage, more a major one."""
    uptime = day_uptime(total, up, degraded)
    if uptime is None:
        return "no_data"
    if down <= 0:
        return "degraded" if degraded > 0 else "operational"
    return "partial_outage" if uptime >= PARTIAL_OUTAGE_UPTIME else "major_outage"


def public_update_words(automatic: bool, status: str, message: str, names: str) -> str:
    """A timeline entry as the public reads it. The status machine's own entries quote the
    probe's error, which may name addresses and hosts: the page says them in its words."""
    if not automatic:
        return message
    if status == "resolved":
        return f"{names} is operating normally again."
    return f"{names} is not responding as it should. We are looking into it."


def public_title(title: str, machine_title: str | None, names: str) -> str:
    """The status machine names the monitor, which the page may show under another name; a
    title a person wrote (anything but ``machine_title``) stays."""
    return f"{names} is down" if machine_title is not None and title == machine_title else title


# ---- subscribers ----

SubscriberKind = Literal["email", "webhook", "slack"]
SUBSCRIBER_KINDS: tuple[SubscriberKind, ...] = ("email", "webhook", "slack")


def follows(chosen: Iterable[str] | None, touched: Iterable[str] | None) -> bool:
    """Whether a subscriber of the ``chosen`` components (None: all of them) hears of a
    change to the ``touched`` ones (None: the whole page, e.g. maintenance of every monitor)."""
    if chosen is None or touched is None:
        return True
    return not set(chosen).isdisjoint(touched)
