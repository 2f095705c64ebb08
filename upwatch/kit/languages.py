"""The ten languages of the seed's ``language`` setting: their gettext catalogs, which one a
browser asks for, and dates and numbers written as each language writes them (Babel).

Source texts are English and marked where they are written (``gettext``/``_`` in templates,
``N_`` in Python tables); ``upwatch/locales/<language>/LC_MESSAGES/messages.po`` holds each
translation (``scripts/translations`` extracts and updates them). A catalog is compiled in
memory from its ``.po`` file on first use (a few milliseconds), so the file in the repository
and the wheel is the only form there is and no compiled copy can go stale beside it. Babel
is imported on the first text in another language than English: a service whose pages are
all English never loads it.
"""

from __future__ import annotations

import functools
import gettext
import re
from collections.abc import Callable
from datetime import date, datetime, tzinfo
from io import BytesIO
from pathlib import Path
from typing import Final, Literal, get_args

Language = Literal["en", "es", "fr", "de", "it", "pt", "ru", "zh", "ja", "ko"]
LANGUAGES: Final[tuple[str, ...]] = get_args(Language)
SOURCE: Final = "en"
CATALOGS: Final = Path(__file__).parent.parent / "locales"

# Each language's name in itself, for a switcher (the same in every language).
NAMES: Final = {
    "en": "English",
    "es": "Español",
    "fr": "Français",
    "de": "Deutsch",
    "it": "Italiano",
    "pt": "Português",
    "ru": "Русский",
    "zh": "中文",
    "ja": "日本語",
    "ko": "한국어",
}


def N_(text: str) -> str:  # noqa: N802 (gettext's conventional name for "mark, do not translate")
    """Marks ``text`` for the catalog where it is defined; it is translated where shown."""
    return text


def catalog_path(language: str) -> Path:
    return CATALOGS / language / "LC_MESSAGES" / "messages.po"


@functools.cache
def translations(language: str) -> gettext.NullTranslations:
    """The catalog of ``language``; English (the source) and anything unknown translate to
    themselves."""
    if language == SOURCE or language not in LANGUAGES:
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po
    from babel.support import Translations

    with catalog_path(language).open("rb") as source:
        catalog = read_po(source, locale=language)
    compiled = BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    return Translations(compiled)


# One entry of the header, its white space stripped first: no pattern of two optional runs of
# white space side by side (they would backtrack against each other on a crafted header).
_TAG = re.compile(r"([A-Za-z]{1,8})(?:-[A-Za-z0-9]{1,8})*(?:[ \t]*;[ \t]*q[ \t]*=[ \t]*([0-9.]+))?")


def negotiate(accept_language: str | None) -> str | None:
    """The first of our languages an ``Accept-Language`` header asks for, by its weights
    (RFC 9110 §12.5.4; ``zh-TW`` asks for ``zh``); None when it asks for none of them."""
    if not accept_language:
        return None
    wanted: list[tuple[float, int, str]] = []
    for n, part in enumerate(accept_language[:1000].split(",")):
        match = _TAG.fullmatch(part.strip())
        if match is None:
            continue
        try:
            weight = 1.0 if match.group(2) is None else float(match.group(2))
        except ValueError:
            continue
        if weight > 0:
            wanted.append((-weight, n, match.group(1).lower()))
    for _weight, _n, language in sorted(wanted):
        if language in LANGUAGES:
            return language
    return None


def moment(value: datetime, zone: tzinfo, language: str, *, seconds: bool = False) -> str:
    """A time as people of ``language`` read it, in ``zone``, with the zone's abbreviation
    (or offset); to the second where asked (the console). English keeps the ISO-like form
    the pages always had."""
    local = value.astimezone(zone)
    if language not in LANGUAGES or language == SOURCE:
        return local.strftime("%Y-%m-%d %H:%M:%S %Z" if seconds else "%Y-%m-%d %H:%M %Z")
    from babel.dates import format_date, format_time

    day = format_date(local, "medium", locale=language)
    length = "medium" if seconds else "short"
    return f"{day} {format_time(local, length, tzinfo=zone, locale=language)} {local:%Z}"


@functools.cache
def _percent_pattern(language: str) -> str:
    # The language's own percent pattern (where the sign goes, with or without a space), with
    # two decimals: "#,##0 %" in French becomes "#,##0.00 %".
    from babel import Locale

    pattern = Locale.parse(language).percent_formats[None].pattern
    return re.sub(r"0(?=[^0]*$)", "0.00", pattern, count=1)


def percent(value: float, language: str) -> str:
    """``value`` (0-100) as a percentage with two decimals, written the language's way."""
    if language not in LANGUAGES or language == SOURCE:
        return f"{value:.2f} %"
    from babel.numbers import format_percent

    return format_percent(value / 100, _percent_pattern(language), locale=language)


def duration(parts: list[tuple[str, int]], language: str) -> str:
    """An outage's length from its ``(unit, amount)`` parts (units: days, hours, minutes,
    seconds), each written the language's short way and joined by spaces: ``3 h 4 min`` in
    French, ``3 時間 4 分`` in Japanese; each part keeps its unit (ten days are not "1 week").
    English keeps the ``3h 4m`` alerts always had."""
    if language not in LANGUAGES or language == SOURCE:
        return " ".join(f"{amount}{unit[0]}" for unit, amount in parts)
    from babel.units import format_unit

    return " ".join(
        format_unit(amount, f"duration-{unit[:-1]}", length="short", locale=language)
        for unit, amount in parts
    )


def of_settings(settings: object) -> str:
    """The language a person's settings record (``User.settings``) names, else English."""
    chosen = settings.get("language") if isinstance(settings, dict) else None
    return chosen if isinstance(chosen, str) and chosen in LANGUAGES else SOURCE


def gettext_in(language: str) -> Callable[[str], str]:
    """The catalog's ``gettext`` of ``language`` (English translates to itself)."""
    return translations(language).gettext


def ngettext_in(language: str) -> Callable[[str, str, int], str]:
    """The catalog's ``ngettext`` of ``language``: the form its grammar wants for a count."""
    return translations(language).ngettext


def day(value: date, language: str, *, weekday: bool = False) -> str:
    """A calendar day as people of ``language`` write it (with its weekday where asked);
    English keeps ``2026-11-27`` (``Friday 2026-11-27``)."""
    if language not in LANGUAGES or language == SOURCE:
        return value.strftime("%A %Y-%m-%d" if weekday else "%Y-%m-%d")
    from babel.dates import format_date

    return format_date(value, "full" if weekday else "medium", locale=language)


def number(value: float, language: str, decimals: int = 0) -> str:
    """A figure with the language's digit grouping and decimal sign (``1,234.5`` in English,
    ``1.234,5`` in German, ``1 234,5`` in French)."""
    if language not in LANGUAGES or language == SOURCE:
        return f"{value:,.{decimals}f}"
    from babel.numbers import format_decimal

    pattern = "#,##0" + ("." + "0" * decimals if decimals else "")
    return format_decimal(value, pattern, locale=language)
