"""The console's pages: Jinja2 templates, autoescaped, and the policy they are served under."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jinja2 import pass_context
from jinja2.runtime import Context

from upwatch.kit.targets import target_of
from upwatch.statuspages.render import templates_in

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


def local_time(moment: datetime | None, zone: str = "UTC") -> str:
    """A moment in the visitor's time zone (their settings), named."""
    if moment is None:
        return "never"
    shown = moment.astimezone(zone_of(zone))
    return shown.strftime("%Y-%m-%d %H:%M:%S ") + (shown.tzname() or zone)


@pass_context
def when(context: Context, moment: datetime | None) -> str:
    return local_time(moment, context.get("zone") or "UTC")


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} %"


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


_environment = templates_in(TEMPLATES)
_environment.globals.update(when=when, percent=percent, ms=ms, target_of=target_of)


def page(template: str, **context: Any) -> str:
    return _environment.get_template(template).render(**context)
