"""The public page as people and feed readers get it: HTML (no script of ours), RSS 2.0 and
Atom 1.0 feeds, shields-style SVG badges. Every template is autoescaped; what the owner
wrote (names, messages, CSS, JS) never becomes markup."""

from __future__ import annotations

import hashlib
import zoneinfo
from collections.abc import Callable
from datetime import UTC, date, datetime, tzinfo
from email.utils import format_datetime
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from upwatch.statuspages import rules
from upwatch.statuspages.schemas import (
    PublicComponent,
    PublicDay,
    PublicGroup,
    PublicIncident,
    PublicStatusPage,
)

TEMPLATES = Path(__file__).parent / "templates"
STYLESHEET = (TEMPLATES / "status-page.css").read_bytes()

WORDS = {
    "operational": "All systems operational",
    "degraded": "Degraded performance",
    "partial_outage": "Partial outage",
    "major_outage": "Major outage",
    "maintenance": "Under maintenance",
    "unknown": "No data yet",
    "no_data": "No data",
}
COMPONENT_WORDS = {**WORDS, "operational": "Operational", "unknown": "No data"}
BADGE_COLORS = {
    "operational": "#2ea043",
    "degraded": "#bf8700",
    "partial_outage": "#d1640a",
    "major_outage": "#cf222e",
    "maintenance": "#0969da",
    "unknown": "#9f9f9f",
}


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def human(moment: datetime, zone: tzinfo = UTC) -> str:
    """A time as people read it, in the page's zone with its abbreviation (or offset)."""
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def zone_of(page: PublicStatusPage) -> tzinfo:
    """The page's time zone; one the system no longer knows reads as UTC rather than
    failing the page."""
    try:
        return zoneinfo.ZoneInfo(page.timeZone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return UTC


def in_zone(page: PublicStatusPage) -> Callable[[datetime], str]:
    zone = zone_of(page)
    return lambda moment: human(moment, zone)


Entry = tuple[PublicGroup | None, list[PublicComponent]]


def layout(page: PublicStatusPage) -> list[Entry]:
    """What the component list shows, in order: each group with its members, and each
    ungrouped component alone (group None). Groups and ungrouped components share one
    sequence by their ``order``; on a tie a group comes first."""
    by_id = {c.id: c for c in page.components}
    grouped = {i for g in page.groups for i in g.componentIds}
    ranked: list[tuple[int, int, int, Entry]] = [
        (g.order, 0, n, (g, [by_id[i] for i in g.componentIds if i in by_id]))
        for n, g in enumerate(page.groups)
    ]
    ranked += [
        (c._order, 1, n, (None, [c])) for n, c in enumerate(page.components) if c.id not in grouped
    ]
    return [entry for *_rank, entry in sorted(ranked, key=lambda r: r[:3])]


def uptime(value: float | None) -> str:
    return "no data" if value is None else f"{value:.2f} % uptime"


def day_words(day: PublicDay) -> str:
    if day.uptimePercentage is None:
        return "no data"
    return f"{day.uptimePercentage:.2f} % uptime, {COMPONENT_WORDS[day.status].lower()}"


def summary(component: PublicComponent) -> str:
    """The bars in words, for those who cannot see them."""
    troubled = sum(d.status in {"partial_outage", "major_outage"} for d in component.days)
    return (
        f"{component.name}, last {len(component.days)} days: {uptime(component.uptime90d)}, "
        f"{troubled} with outages"
    )


# Each bar's markup by what it shows: the same day in the same place recurs in every build
# of the day and on every component with the same figures.
_RECTS: dict[tuple[int, date, str, float | None], str] = {}


def _rect(n: int, day: PublicDay) -> str:
    key = (n, day.date, day.status, day.uptimePercentage)
    rect = _RECTS.get(key)
    if rect is None:
        if len(_RECTS) > 200_000:
            _RECTS.clear()
        rect = _RECTS[key] = (
            f'<rect class="day day-{day.status}" x="{n * 4}" y="0" width="3" height="30">'
            f"<title>{day.date.isoformat()}: {day_words(day)}</title></rect>"
        )
    return rect


def bars(component: PublicComponent) -> Markup:
    """The component's day bars as inline SVG, one rect with a tooltip per day. Written here
    rather than looped in the template: 1,800 bars through Jinja's runtime were half of a
    20-component page's build."""
    rects = "".join([_rect(n, day) for n, day in enumerate(component.days)])
    label = escape(summary(component))
    # Safe: statuses, dates and figures are ours; the one text of the owner's is escaped.
    return Markup(  # noqa: S704
        f'<svg class="bars" viewBox="0 0 {len(component.days) * 4} 30" '
        f'preserveAspectRatio="none" role="img" aria-label="{label}">{rects}</svg>'
    )


def banner(page: PublicStatusPage) -> str:
    """The banner's words: the overall status, but "all systems" only when every component
    has been checked."""
    if page.overallStatus == "operational" and any(c.status == "unknown" for c in page.components):
        return "All checked systems operational"
    return WORDS[page.overallStatus]


def headline(page: PublicStatusPage) -> PublicIncident | None:
    """The open incident the banner names (``rules.headline_incident``)."""
    return rules.headline_incident([(i.impact, i) for i in page.incidents if i.impact is not None])


def last_change(incident: PublicIncident) -> datetime:
    return max([incident.startedAt, *(u.createdAt for u in incident.updates)])


def timeline_text(incident: PublicIncident, zone: tzinfo = UTC) -> str:
    return "\n".join(
        f"{human(u.createdAt, zone)} {u.status}: {u.message}" for u in incident.updates
    )


def content_tag(text: str) -> str:
    """A short digest naming a version of the owner's CSS or JS (for cache busting); empty
    when there is none."""
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest() if text else ""


def templates_in(folder: Path) -> Environment:
    """Upwatch's HTML templates (these and the console's): everything autoescaped, and a name
    the template does not receive is an error rather than an empty string."""
    return Environment(
        loader=FileSystemLoader(folder),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


_environment = templates_in(TEMPLATES)
_environment.globals.update(
    words=WORDS,
    banner=banner,
    headline=headline,
    state_words=COMPONENT_WORDS,
    iso=iso,
    human=human,
    uptime=uptime,
    day_words=day_words,
    summary=summary,
    bars=bars,
    last_change=last_change,
    timeline_text=timeline_text,
    rfc822=lambda moment: format_datetime(moment.astimezone(UTC), usegmt=True),
)


def html(page: PublicStatusPage, custom_css: str, custom_js: str) -> bytes:
    names = {c.id: c.name for c in page.components}
    template = _environment.get_template("page.html")
    return template.render(
        page=page,
        custom_css=content_tag(custom_css),
        custom_js=content_tag(custom_js),
        names_of=lambda ids: ", ".join(names[i] for i in ids if i in names),
        human=in_zone(page),
        entries=layout(page),
    ).encode()


def message(title: str, text: str, slug: str | None = None, theme: str = "light") -> bytes:
    """A small page saying what just happened (subscribed, confirmed, unsubscribed)."""
    template = _environment.get_template("message.html")
    return template.render(title=title, text=text, slug=slug, theme=theme).encode()


def _feed(name: str, page: PublicStatusPage, link: str) -> bytes:
    # Dates for machines stay UTC; the timeline people read is in the page's zone.
    zone = zone_of(page)
    return (
        _environment.get_template(name)
        .render(page=page, link=link, timeline_text=lambda i: timeline_text(i, zone))
        .encode()
    )


def password_form(slug: str, wrong: bool) -> bytes:
    """The form of a password page, naming nothing of it (statuspages/access.py)."""
    return _environment.get_template("password.html").render(slug=slug, wrong=wrong).encode()


def rss(page: PublicStatusPage, link: str) -> bytes:
    return _feed("feed.rss", page, link)


def atom(page: PublicStatusPage, link: str) -> bytes:
    return _feed("feed.atom", page, link)


def _text_width(text: str) -> int:
    # Verdana 11 px averages about 6.5 px a character; 10 px of padding on each side.
    return int(len(text) * 6.5) + 20


def badge(label: str, value: str, color: str) -> bytes:
    return (
        _environment.get_template("badge.svg")
        .render(
            label=label,
            value=value,
            color=color,
            left=_text_width(label),
            right=_text_width(value),
        )
        .encode()
    )


def status_badge(page: PublicStatusPage) -> bytes:
    status = page.overallStatus
    return badge("status", COMPONENT_WORDS[status].lower(), BADGE_COLORS[status])


def uptime_badge(component: PublicComponent) -> bytes:
    value = component.uptime90d
    if value is None:
        return badge("uptime 90d", "no data", "#9f9f9f")
    color = "#2ea043" if value >= 99.9 else "#bf8700" if value >= 99 else "#cf222e"
    return badge("uptime 90d", f"{value:.2f}%", color)
