"""The public page as people and feed readers get it: HTML (no script of ours), RSS 2.0 and
Atom 1.0 feeds, shields-style SVG badges. Every template is autoescaped; what the owner
wrote (names, messages, CSS, JS) never becomes markup."""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime
from email.utils import format_datetime
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from upwatch.statuspages.schemas import PublicComponent, PublicDay, PublicIncident, PublicStatusPage

TEMPLATES = Path(__file__).parent / "templates"
STYLESHEET = (TEMPLATES / "status-page.css").read_bytes()

WORDS = {
    "operational": "All systems operational",
    "degraded": "Degraded performance",
    "partial_outage": "Partial outage",
    "major_outage": "Major outage",
    "maintenance": "Under maintenance",
    "unknown": "Not checked",
    "no_data": "No data",
}
COMPONENT_WORDS = {**WORDS, "operational": "Operational"}
BADGE_COLORS = {
    "operational": "#2ea043",
    "degraded": "#bf8700",
    "partial_outage": "#d1640a",
    "major_outage": "#cf222e",
    "maintenance": "#0969da",
}


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def human(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


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


def last_change(incident: PublicIncident) -> datetime:
    return max([incident.startedAt, *(u.createdAt for u in incident.updates)])


def timeline_text(incident: PublicIncident) -> str:
    return "\n".join(f"{human(u.createdAt)} {u.status}: {u.message}" for u in incident.updates)


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
    ).encode()


def message(title: str, text: str, slug: str | None = None, theme: str = "light") -> bytes:
    """A small page saying what just happened (subscribed, confirmed, unsubscribed)."""
    template = _environment.get_template("message.html")
    return template.render(title=title, text=text, slug=slug, theme=theme).encode()


def password_form(slug: str, wrong: bool) -> bytes:
    """The form of a password page, naming nothing of it (statuspages/access.py)."""
    return _environment.get_template("password.html").render(slug=slug, wrong=wrong).encode()


def rss(page: PublicStatusPage, link: str) -> bytes:
    return _environment.get_template("feed.rss").render(page=page, link=link).encode()


def atom(page: PublicStatusPage, link: str) -> bytes:
    return _environment.get_template("feed.atom").render(page=page, link=link).encode()


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
