"""A monitor's response-time chart and its 90 day bars, drawn on the server as SVG.

Pure functions: the points come in (already read), markup goes out. No script draws them, so
they show with JavaScript off, and each carries its figures in words for screen readers.
Colours and strokes come from console.css (the page's policy allows no inline style). Their
words are in the visitor's language (``words``; English without one).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Final

from markupsafe import Markup, escape

from upwatch.kit.histogram import Histogram
from upwatch.statuspages import rules
from upwatch.statuspages.render import ENGLISH, Words

RANGES: Final = {"24h": 1, "7d": 7, "30d": 30, "90d": 90}  # days each range covers
BAR_DAYS: Final = 90
WIDTH: Final = 720
HEIGHT: Final = 200
PAD_LEFT: Final = 56  # room for the y axis' labels
PAD_BOTTOM: Final = 22


@dataclass(frozen=True)
class Point:
    label: str  # an hour ("14:00") or a day ("2026-11-24")
    p50: float | None
    p95: float | None


def hourly(
    times: Iterable[tuple[datetime, float]], now: datetime, zone: tzinfo = UTC
) -> list[Point]:
    """The last 24 hours' median and p95 per hour of ``zone``'s clock, oldest first (an hour
    without checks has neither)."""
    local = now.astimezone(zone).replace(minute=0, second=0, microsecond=0)
    # Counted in UTC: adding hours to a local time would skip or repeat one at a DST change.
    start = local.astimezone(UTC) - timedelta(hours=23)
    hours: dict[int, Histogram] = defaultdict(Histogram)
    for moment, ms in times:
        slot = int((moment - start).total_seconds() // 3600)
        if 0 <= slot < 24:
            hours[slot].add(ms)
    return [
        _point((start + timedelta(hours=n)).astimezone(zone).strftime("%H:00"), hours.get(n))
        for n in range(24)
    ]


def daily(buckets: Iterable[tuple[str, int, int]], first: date, days: int) -> list[Point]:
    """Each day's median and p95 from its stored histogram buckets, (day, bucket, count)."""
    per_day: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for day, bucket, count in buckets:
        per_day[day].append((bucket, count))
    points = []
    for n in range(days):
        day = (first + timedelta(days=n)).isoformat()
        found = per_day.get(day)
        points.append(_point(day, Histogram.from_buckets(found) if found else None))
    return points


def _point(label: str, histogram: Histogram | None) -> Point:
    if histogram is None or histogram.count == 0:
        return Point(label, None, None)
    return Point(label, histogram.quantile(0.5), histogram.quantile(0.95))


def _coordinates(values: Sequence[float | None], top: float) -> list[tuple[float, float] | None]:
    inner_w, inner_h = WIDTH - PAD_LEFT - 8, HEIGHT - PAD_BOTTOM - 8
    step = inner_w / max(len(values) - 1, 1)
    return [
        None if value is None else (PAD_LEFT + n * step, 8 + inner_h - (value / top) * inner_h)
        for n, value in enumerate(values)
    ]


def _line(values: Sequence[float | None], top: float, name: str) -> str:
    """A path through the known values, lifted where one is missing, and a dot on each (an
    hour alone between gaps still shows)."""
    parts, dots, pen_down = [], [], False
    for point in _coordinates(values, top):
        if point is None:
            pen_down = False
            continue
        x, y = point
        parts.append(f"{'L' if pen_down else 'M'}{x:.1f},{y:.1f}")
        dots.append(f'<circle class="{name}" cx="{x:.1f}" cy="{y:.1f}" r="2.5"/>')
        pen_down = True
    return f'<path class="{name}" d="{" ".join(parts)}"/>' + "".join(dots)


def _nice_top(value: float) -> float:
    """The axis' top: the next 1, 2 or 5 times a power of ten at or above ``value``."""
    magnitude = 1.0
    while magnitude * 10 <= value:
        magnitude *= 10
    for step in (1, 2, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude  # pragma: no cover - the loop above always returns


def _ms(value: float) -> str:
    return f"{value:.0f} ms"


def summary(points: Sequence[Point], words: Words = ENGLISH) -> str:
    """The chart in words."""
    p50 = [p.p50 for p in points if p.p50 is not None]
    p95 = [p.p95 for p in points if p.p95 is not None]
    if not p50:
        return words.gettext("No response times in this range.")
    figures = {
        "low": _ms(min(p50)),
        "high": _ms(max(p50)),
        "low95": _ms(min(p95)),
        "high95": _ms(max(p95)),
        "num": len(points),
    }
    if points[0].label.endswith(":00"):
        said = words.ngettext(
            "Median response time from %(low)s to %(high)s; p95 from %(low95)s to "
            "%(high95)s, over %(num)d hour.",
            "Median response time from %(low)s to %(high)s; p95 from %(low95)s to "
            "%(high95)s, over %(num)d hours.",
            len(points),
        )
    else:
        said = words.ngettext(
            "Median response time from %(low)s to %(high)s; p95 from %(low95)s to "
            "%(high95)s, over %(num)d day.",
            "Median response time from %(low)s to %(high)s; p95 from %(low95)s to "
            "%(high95)s, over %(num)d days.",
            len(points),
        )
    return said % figures


def chart(points: Sequence[Point], words: Words = ENGLISH) -> Markup:
    """Median and p95 lines over ``points``, with the axis' top and both ends labelled."""
    known = [p.p95 for p in points if p.p95 is not None]
    if not known:
        said = escape(words.gettext("No response times in this range."))
        return Markup(f'<p class="chart-empty">{said}</p>')  # noqa: S704 (escaped)
    top = _nice_top(max(known))
    base = HEIGHT - PAD_BOTTOM
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(summary(points, words))}">',
        f'<line class="axis" x1="{PAD_LEFT}" y1="{base}" x2="{WIDTH - 8}" y2="{base}"/>',
        f'<line class="axis" x1="{PAD_LEFT}" y1="8" x2="{PAD_LEFT}" y2="{base}"/>',
        f'<text class="tick" x="{PAD_LEFT - 6}" y="14" text-anchor="end">{top:.0f} ms</text>',
        f'<text class="tick" x="{PAD_LEFT - 6}" y="{base}" text-anchor="end">0</text>',
        f'<text class="tick" x="{PAD_LEFT}" y="{HEIGHT - 4}">{escape(points[0].label)}</text>',
        f'<text class="tick" x="{WIDTH - 8}" y="{HEIGHT - 4}" text-anchor="end">'
        f"{escape(points[-1].label)}</text>",
        _line([p.p95 for p in points], top, "p95"),
        _line([p.p50 for p in points], top, "p50"),
        "</svg>",
    ]
    # Safe: every text in it is ours (figures, dates, hours), escaped all the same.
    return Markup("".join(parts))  # noqa: S704


def day_bars(
    counts: dict[str, tuple[int, int, int, int]], today: date, words: Words = ENGLISH
) -> Markup:
    """The last 90 days as bars, coloured as the status page colours them; ``counts`` is
    (total, up, degraded, down) by ISO day."""
    first = today - timedelta(days=BAR_DAYS - 1)
    rects, troubled, period = [], 0, [0, 0, 0]
    for n in range(BAR_DAYS):
        day = (first + timedelta(days=n)).isoformat()
        total, up, degraded, down = counts.get(day, (0, 0, 0, 0))
        status = rules.day_status(total, up, degraded, down)
        uptime = rules.day_uptime(total, up, degraded)
        troubled += status in {"partial_outage", "major_outage"}
        period = [period[0] + total, period[1] + up, period[2] + degraded]
        said = escape(
            words.gettext("%(day)s: %(uptime)s") % {"day": day, "uptime": words.uptime(uptime)}
        )
        rects.append(
            f'<rect class="day day-{status}" x="{n * 4}" y="0" width="3" height="30">'
            f"<title>{said}</title></rect>"
        )
    label = words.ngettext(
        "Last %(days)d days: %(uptime)s, %(num)d day with outages",
        "Last %(days)d days: %(uptime)s, %(num)d days with outages",
        troubled,
    ) % {"days": BAR_DAYS, "uptime": words.uptime(rules.day_uptime(*period)), "num": troubled}
    # Safe: dates, statuses and figures are ours, and the words escaped.
    return Markup(  # noqa: S704
        f'<svg class="bars" viewBox="0 0 {BAR_DAYS * 4} 30" preserveAspectRatio="none" '
        f'role="img" aria-label="{escape(label)}">{"".join(rects)}</svg>'
    )
