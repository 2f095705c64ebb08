"""The public page as people and feed readers get it: HTML (no script of ours), RSS 2.0 and
Atom 1.0 feeds, shields-style SVG badges. Every template is autoescaped; what the owner
wrote (names, messages, CSS, JS) never becomes markup."""

from __future__ import annotations

import functools
import hashlib
import unicodedata
import zoneinfo
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo
from email.utils import format_datetime
from pathlib import Path
from typing import Final

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from upwatch.kit import languages
from upwatch.kit.languages import N_
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
    "operational": N_("All systems operational"),
    "degraded": N_("Degraded performance"),
    "partial_outage": N_("Partial outage"),
    "major_outage": N_("Major outage"),
    "maintenance": N_("Under maintenance"),
    "unknown": N_("No data yet"),
    "no_data": N_("No data"),
}
COMPONENT_WORDS = {**WORDS, "operational": N_("Operational"), "unknown": N_("No data")}
# What incidents and their updates say of themselves, as stored (incidents/schemas.py), in
# the lower case the English page has always shown them in.
INCIDENT_WORDS = {
    "investigating": N_("investigating"),
    "identified": N_("identified"),
    "monitoring": N_("monitoring"),
    "resolved": N_("resolved"),
    "low": N_("low"),
    "medium": N_("medium"),
    "high": N_("high"),
    "critical": N_("critical"),
}
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


def human(moment: datetime, zone: tzinfo = UTC, language: str = languages.SOURCE) -> str:
    """A time as people read it, in the page's zone with its abbreviation (or offset)."""
    return languages.moment(moment, zone, language)


def zone_of(page: PublicStatusPage) -> tzinfo:
    """The page's time zone; one the system no longer knows reads as UTC rather than
    failing the page."""
    try:
        return zoneinfo.ZoneInfo(page.timeZone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return UTC


@dataclass(frozen=True)
class Words:
    """The page's words in one language: its catalog, its dates and its numbers."""

    language: str

    @functools.cached_property
    def gettext(self) -> Callable[[str], str]:
        return languages.translations(self.language).gettext

    @functools.cached_property
    def ngettext(self) -> Callable[[str, str, int], str]:
        return languages.translations(self.language).ngettext

    def percent(self, value: float) -> str:
        return languages.percent(value, self.language)

    def uptime(self, value: float | None) -> str:
        if value is None:
            return self.gettext("no data")
        return self.gettext("%(percent)s uptime") % {"percent": self.percent(value)}

    def day(self, day: PublicDay) -> str:
        if day.uptimePercentage is None:
            return self.gettext("no data")
        return self.gettext("%(uptime)s, %(state)s") % {
            "uptime": self.uptime(day.uptimePercentage),
            "state": self.state(day.status),
        }

    def state(self, status: str) -> str:
        """A status word inside a sentence or on a badge: lower case in English, as the
        language writes it elsewhere (German capitalises its nouns)."""
        word = self.gettext(COMPONENT_WORDS[status])
        return word.lower() if self.language == languages.SOURCE else word

    def summary(self, component: PublicComponent) -> str:
        """The bars in words, for those who cannot see them."""
        troubled = sum(d.status in {"partial_outage", "major_outage"} for d in component.days)
        return self.gettext(
            "%(name)s, last %(days)d days: %(uptime)s, days with outages: %(troubled)d"
        ) % {
            "name": component.name,
            "days": len(component.days),
            "uptime": self.uptime(component.uptime90d),
            "troubled": troubled,
        }

    def banner(self, page: PublicStatusPage) -> str:
        """The banner's words: the overall status, but "all systems" only when every
        component has been checked."""
        if page.overallStatus == "operational" and any(
            c.status == "unknown" for c in page.components
        ):
            return self.gettext("All checked systems operational")
        return self.gettext(WORDS[page.overallStatus])


ENGLISH = Words(languages.SOURCE)


def in_zone(page: PublicStatusPage, language: str = languages.SOURCE) -> Callable[[datetime], str]:
    zone = zone_of(page)
    return lambda moment: human(moment, zone, language)


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


# Each bar's markup by what it shows: the same day in the same place recurs in every build
# of the day and on every component with the same figures.
_RECTS: dict[tuple[int, date, str, float | None, str], str] = {}


def _rect(n: int, day: PublicDay, words: Words) -> str:
    key = (n, day.date, day.status, day.uptimePercentage, words.language)
    rect = _RECTS.get(key)
    if rect is None:
        if len(_RECTS) > 200_000:
            _RECTS.clear()
        rect = _RECTS[key] = (
            f'<rect class="day day-{day.status}" x="{n * 4}" y="0" width="3" height="30">'
            f"<title>{day.date.isoformat()}: {escape(words.day(day))}</title></rect>"
        )
    return rect


def bars(component: PublicComponent, words: Words = ENGLISH) -> Markup:
    """The component's day bars as inline SVG, one rect with a tooltip per day. Written here
    rather than looped in the template: 1,800 bars through Jinja's runtime were half of a
    20-component page's build."""
    rects = "".join([_rect(n, day, words) for n, day in enumerate(component.days)])
    label = escape(words.summary(component))
    # Safe: statuses, dates and figures are ours; the one text of the owner's is escaped.
    return Markup(  # noqa: S704
        f'<svg class="bars" viewBox="0 0 {len(component.days) * 4} 30" '
        f'preserveAspectRatio="none" role="img" aria-label="{label}">{rects}</svg>'
    )


def headline(page: PublicStatusPage) -> PublicIncident | None:
    """The open incident the banner names (``rules.headline_incident``)."""
    return rules.headline_incident([(i.impact, i) for i in page.incidents if i.impact is not None])


def last_change(incident: PublicIncident) -> datetime:
    return max([incident.startedAt, *(u.createdAt for u in incident.updates)])


def timeline_text(incident: PublicIncident, zone: tzinfo = UTC, words: Words = ENGLISH) -> str:
    return "\n".join(
        f"{human(u.createdAt, zone, words.language)} "
        f"{words.gettext(INCIDENT_WORDS.get(u.status, u.status))}: {u.message}"
        for u in incident.updates
    )


def content_tag(text: str) -> str:
    """A short digest naming a version of the owner's CSS or JS (for cache busting); empty
    when there is none."""
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest() if text else ""


def templates_in(folder: Path) -> Environment:
    """Upwatch's HTML templates (these and the console's): everything autoescaped, and a name
    the template does not receive is an error rather than an empty string. Texts are marked
    with ``{% trans %}`` and ``_()``; each render passes the catalog of its language
    (``gettext``, ``ngettext``, ``_``), so one environment serves every language at once."""
    environment = Environment(
        loader=FileSystemLoader(folder),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    # A {% trans %} block over several lines is looked up with its white space collapsed,
    # as babel.cfg extracts it (``trimmed = true``).
    environment.policies["ext.i18n.trimmed"] = True
    return environment


def speaking(words: Words) -> dict[str, object]:
    """What a template needs to speak ``words``' language."""
    return {
        "language": words.language,
        "gettext": words.gettext,
        "_": words.gettext,
        "ngettext": words.ngettext,
        "words": words,
    }


_environment = templates_in(TEMPLATES)
_environment.globals.update(
    headline=headline,
    iso=iso,
    bars=bars,
    last_change=last_change,
    rfc822=lambda moment: format_datetime(moment.astimezone(UTC), usegmt=True),
    state_words=COMPONENT_WORDS,
    incident_words=INCIDENT_WORDS,
    language_names=languages.NAMES,
)


def html(
    page: PublicStatusPage, custom_css: str, custom_js: str, language: str | None = None
) -> bytes:
    """The page in ``language`` (default: the page's own). When the page lets visitors pick
    theirs, its footer links to each language."""
    words = Words(language or page.language)
    names = {c.id: c.name for c in page.components}
    template = _environment.get_template("page.html")
    return template.render(
        page=page,
        custom_css=content_tag(custom_css),
        custom_js=content_tag(custom_js),
        names_of=lambda ids: ", ".join(names[i] for i in ids if i in names),
        human=in_zone(page, words.language),
        entries=layout(page),
        languages=languages.LANGUAGES if page.visitorLanguage else (),
        **speaking(words),
    ).encode()


def message(
    title: str,
    text: str,
    slug: str | None = None,
    theme: str = "light",
    language: str = languages.SOURCE,
    values: Mapping[str, str] | None = None,
) -> bytes:
    """A small page saying what just happened (subscribed, confirmed, unsubscribed):
    ``title`` and ``text`` are source texts, translated here; ``values`` fill ``text``'s
    placeholders after the translation."""
    words = Words(language)
    said = words.gettext(text)
    template = _environment.get_template("message.html")
    return template.render(
        title=words.gettext(title),
        text=said % values if values else said,
        slug=slug,
        theme=theme,
        **speaking(words),
    ).encode()


def _feed(name: str, page: PublicStatusPage, link: str) -> bytes:
    # Dates for machines stay UTC; the timeline people read is in the page's zone and
    # language.
    zone, words = zone_of(page), Words(page.language)
    return (
        _environment.get_template(name)
        .render(
            page=page,
            link=link,
            timeline_text=lambda incident: timeline_text(incident, zone, words),
            **speaking(words),
        )
        .encode()
    )


def password_form(slug: str, wrong: bool, language: str = languages.SOURCE) -> bytes:
    """The form of a password page, naming nothing of it (statuspages/access.py): in the
    visitor's language when their browser names one of ours, since the page's own setting
    is not shown before the password."""
    return (
        _environment.get_template("password.html")
        .render(slug=slug, wrong=wrong, **speaking(Words(language)))
        .encode()
    )


def rss(page: PublicStatusPage, link: str) -> bytes:
    return _feed("feed.rss", page, link)


def atom(page: PublicStatusPage, link: str) -> bytes:
    return _feed("feed.atom", page, link)


# Verdana 11 px (the badge's font) advances about 6.5 px for a Latin letter; an East Asian
# wide or full-width character (CJK, kana, hangul) takes a whole em, 11 px.
_NARROW_PX: Final = 6.5
_WIDE_PX: Final = 11.0


def text_width(text: str) -> int:
    """The width of ``text`` in the badge's font, with 10 px of padding on each side."""
    width = sum(
        _WIDE_PX if unicodedata.east_asian_width(c) in ("W", "F") else _NARROW_PX for c in text
    )
    return int(width) + 20


def badge(label: str, value: str, color: str) -> bytes:
    return (
        _environment.get_template("badge.svg")
        .render(
            label=label,
            value=value,
            color=color,
            left=text_width(label),
            right=text_width(value),
        )
        .encode()
    )


def status_badge(page: PublicStatusPage) -> bytes:
    status, words = page.overallStatus, Words(page.language)
    label = words.gettext("status")
    return badge(label, words.state(status), BADGE_COLORS[status])


def uptime_badge(component: PublicComponent, language: str = languages.SOURCE) -> bytes:
    words = Words(language)
    label = words.gettext("uptime 90d")
    value = component.uptime90d
    if value is None:
        return badge(label, words.gettext("no data"), "#9f9f9f")
    color = "#2ea043" if value >= 99.9 else "#bf8700" if value >= 99 else "#cf222e"
    return badge(label, words.percent(value).replace(" ", ""), color)
