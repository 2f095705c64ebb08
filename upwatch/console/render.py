"""The console's pages: Jinja2 templates, autoescaped, in the visitor's language
(docs/languages.md), and the policy they are served under."""

from __future__ import annotations

import functools
from contextvars import ContextVar
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jinja2 import pass_context
from jinja2.runtime import Context

from upwatch.kit import languages
from upwatch.kit.targets import target_of
from upwatch.statuspages.render import Words, templates_in

TEMPLATES: Final = Path(__file__).parent / "templates"
STATIC: Final = Path(__file__).parent / "static"
# Scripts and styles from /app/static only, no inline code, never framed.
POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


def zone_of(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        return UTC


def local_time(moment: datetime | None, zone: str = "UTC", words: Words | None = None) -> str:
    """A moment in the visitor's time zone (their settings), named, to the second, written
    their language's way."""
    words = words or words_in(languages.SOURCE)
    if moment is None:
        return words.gettext("never")
    return languages.moment(moment, zone_of(zone), words.language, seconds=True)


@pass_context
def when(context: Context, moment: datetime | None) -> str:
    return local_time(moment, context.get("zone") or "UTC", _speaking.get())


def percent(value: float | None, words: Words | None = None) -> str:
    return "-" if value is None else (words or words_in(languages.SOURCE)).percent(value)


def percent_here(value: float | None) -> str:
    return percent(value, _speaking.get())


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def sparkline(values: list[float | None], width: int = 120, height: int = 24) -> str:
    """An SVG polyline's points for response times, oldest first (empty without any), in
    tenths of the drawing's units (its viewBox is ten times its size): whole numbers, which
    a list of 250 monitors formats three times faster than decimals."""
    known = [v for v in values if v is not None]
    if len(known) < 2:
        return ""
    top = max(known) or 1.0
    step = width * 10 / (len(known) - 1)
    scale = (height - 2) * 10 / top
    bottom = height * 10 - 10
    return " ".join([f"{round(i * step)},{round(bottom - v * scale)}" for i, v in enumerate(known)])


# The language of the page being drawn: read by the template's texts, dates and numbers,
# also inside macros imported without the page's context (``_field.html``).
_speaking: ContextVar[Words] = ContextVar("console_language")


def _gettext(text: str) -> str:
    return _speaking.get().gettext(text)


def _ngettext(singular: str, plural: str, n: int) -> str:
    return _speaking.get().ngettext(singular, plural, n)


def _pgettext(context: str, text: str) -> str:
    """``text`` where its words differ by use (a range's "From" is not a sender's)."""
    return languages.translations(_speaking.get().language).pgettext(context, text)


_environment = templates_in(TEMPLATES)
_environment.globals.update(when=when, percent=percent_here, ms=ms, target_of=target_of)
_environment.globals.update(gettext=_gettext, _=_gettext, ngettext=_ngettext, pgettext=_pgettext)


@functools.cache
def words_in(language: str) -> Words:
    return Words(language if language in languages.LANGUAGES else languages.SOURCE)


def page(template: str, language: str = languages.SOURCE, **context: Any) -> str:
    """``template`` rendered in ``language`` (its texts, dates and numbers)."""
    words = words_in(language)
    drawing = _speaking.set(words)
    try:
        return _environment.get_template(template).render(language=words.language, **context)
    finally:
        _speaking.reset(drawing)
