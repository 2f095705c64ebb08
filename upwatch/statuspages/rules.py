"""What a status page says, as pure functions of monitor states, open incidents and day
counts: a component's status, a day's status, and the page's overall status
(docs/status-pages.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Literal, TypeVar

from upwatch.incidents.rules import OPENED
from upwatch.kit.languages import N_

T = TypeVar("T")

ComponentStatus = Literal[
    "operational", "degraded", "partial_outage", "major_outage", "maintenance", "unknown"
]
OverallStatus = Literal[
    "operational", "degraded", "partial_outage", "major_outage", "maintenance", "unknown"
]
Impact = Literal["degraded", "partial_outage", "major_outage"]
DayStatus = Literal["operational", "degraded", "partial_outage", "major_outage", "no_data"]

# A day with at least this uptime (and some downtime) is a partial outage; below, a major one.
PARTIAL_OUTAGE_UPTIME = 95.0

# What an open incident says about what it affects, from its severity.
SEVERITY_IMPACT: dict[str, Impact] = {
    "low": "degraded",
    "medium": "degraded",
    "high": "partial_outage",
    "critical": "major_outage",
}
# From calm to worst; ``unknown`` is below everything: any knowledge beats none.
_RANK: dict[str, int] = {
    "unknown": 0,
    "operational": 1,
    "maintenance": 2,
    "degraded": 3,
    "partial_outage": 4,
    "major_outage": 5,
}


def component_status(monitor_status: str, region_statuses: Iterable[str] = ()) -> ComponentStatus:
    """A component shows its monitor's status. A monitor that is up while some of its regions
    fail (too few to make it down) is a partial outage; one that is paused or has no result
    yet is unknown ("no data"), which the overall status leaves out."""
    if monitor_status == "down":
        return "major_outage"
    if monitor_status == "degraded":
        return "degraded"
    if monitor_status == "up":
        return "partial_outage" if "down" in region_statuses else "operational"
    if monitor_status == "maintenance":
        return "maintenance"
    return "unknown"


def incident_impact(severity: str) -> Impact:
    """An open incident's impact on what it affects; an unknown severity counts as medium."""
    return SEVERITY_IMPACT.get(severity, "degraded")


def worst(statuses: Iterable[ComponentStatus]) -> ComponentStatus:
    """The worst of ``statuses`` (a group of components, or a component and the incidents
    open on it): ``unknown`` only when nothing is known, and for none at all."""
    return max(statuses, key=_RANK.__getitem__, default="unknown")


def with_incidents(status: ComponentStatus, impacts: Iterable[Impact]) -> ComponentStatus:
    """A component under open incidents shows the worst of its checks and their impacts: a
    person who opened a high incident on it knows something its checks do not."""
    return worst([status, *impacts])


def overall_status(
    statuses: Iterable[ComponentStatus], impacts: Iterable[Impact] = ()
) -> OverallStatus:
    """The page's banner from its components' statuses and the impacts of the incidents open
    on the page: every known component down is a major outage, some down (or partly down) a
    partial outage, then degraded, then maintenance, else operational; an open incident's
    impact raises it to at least that impact. Unknown components are left out; a page where
    nothing is known and nothing is open is ``unknown`` ("no data yet")."""
    known = [s for s in statuses if s != "unknown"]
    opened = list(impacts)
    down = known.count("major_outage")
    found: OverallStatus
    if known and down == len(known):
        found = "major_outage"
    elif down or "partial_outage" in known:
        found = "partial_outage"
    elif "degraded" in known:
        found = "degraded"
    elif "maintenance" in known:
        found = "maintenance"
    elif known:
        found = "operational"
    else:
        found = "unknown"
    return worst([found, *opened])


def headline_incident(impacts: Sequence[tuple[Impact, T]]) -> T | None:
    """Of the open incidents on a page (with their impacts, newest first), the one the
    banner names: the worst, the newest of equals."""
    if not impacts:
        return None
    top = max(_RANK[impact] for impact, _ in impacts)
    return next(item for impact, item in impacts if _RANK[impact] == top)


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


def public_update_words(
    automatic: bool,
    status: str,
    message: str,
    names: str,
    gettext: Callable[[str], str] = str,
) -> str:
    """A timeline entry as the public reads it. The status machine's own entries quote the
    probe's error, which may name addresses and hosts: the page says them in its words (in
    the language of ``gettext``)."""
    if not automatic:
        # A manual incident opened without a description starts with the system's own words.
        return gettext(message) if message == OPENED else message
    if status == "resolved":
        return gettext(N_("%(names)s is operating normally again.")) % {"names": names}
    said = gettext(N_("%(names)s is not responding as it should. We are looking into it."))
    return said % {"names": names}


def public_title(
    title: str, machine_title: str | None, names: str, gettext: Callable[[str], str] = str
) -> str:
    """The status machine names the monitor, which the page may show under another name; a
    title a person wrote (anything but ``machine_title``) stays."""
    if machine_title is not None and title == machine_title:
        return gettext(N_("%(names)s is down")) % {"names": names}
    return title


# Worst last: a group shows the last of these that any member has.
_GROUP_RANK: dict[str, int] = {
    "operational": 1,
    "maintenance": 2,
    "degraded": 3,
    "partial_outage": 4,
    "major_outage": 5,
}


def group_status(statuses: Iterable[ComponentStatus]) -> ComponentStatus:
    """A component group's status: its worst member's. A member not checked yet (unknown)
    is outranked by any known one, so a group is unknown only when all of it is (or it is
    empty); maintenance outranks operational, any trouble outranks maintenance."""
    worst: ComponentStatus = "unknown"
    for status in statuses:
        if _GROUP_RANK.get(status, 0) > _GROUP_RANK.get(worst, 0):
            worst = status
    return worst


# ---- subscribers ----

SubscriberKind = Literal["email", "webhook", "slack"]
SUBSCRIBER_KINDS: tuple[SubscriberKind, ...] = ("email", "webhook", "slack")


def follows(chosen: Iterable[str] | None, touched: Iterable[str] | None) -> bool:
    """Whether a subscriber of the ``chosen`` components (None: all of them) hears of a
    change to the ``touched`` ones (None: the whole page, e.g. maintenance of every monitor)."""
    if chosen is None or touched is None:
        return True
    return not set(chosen).isdisjoint(touched)
