"""Small inline SVG charts for the HTML report, drawn without matplotlib.

The HTML report must open anywhere, offline, whatever is installed, so its plots are plain SVG text
written here: a bar chart (the per-topic difference plot), a categorical point chart (bias-variance
per system, with the gates' limits), a scatter plot and a time series (a gate's history). Every
label is escaped; every mark carries a ``<title>`` that a browser shows on hover.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_bvtest.report.plots import GAIN_COLOR as GOOD
from pytest_bvtest.report.plots import LOSS_COLOR as BAD
from pytest_bvtest.report.plots import TIE_COLOR as NEUTRAL
from pytest_bvtest.report.untrusted import html_text as escape  # every label of a chart goes through it

WIDTH = 760
HEIGHT = 320
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 48, 64
# Beyond this many categories only the highlighted ones are named on the x axis.
MAX_CATEGORY_LABELS = 40
# The height a level's label takes (11px text and a gap), so that two labels do not overlap.
_LEVEL_LABEL_HEIGHT = 13
# About the width of a character of a tick label (10.5px): a point's label that would leave the chart goes left.
_CHARACTER_WIDTH = 6.5


#: The charts' styles: in the HTML report's ``<style>``, and inside a chart written as its own file.
CHART_STYLE = """svg.chart{font:11px system-ui,sans-serif;background:#fff}
.chart-title{font-size:13px;font-weight:600}.axis-label{font-size:12px}.tick{font-size:10.5px}
.grid{stroke:#e5e5e5}.axis{stroke:#333}.level{font-size:11px}
.corner-note{font-size:12px;font-style:italic;fill:#2e7d32}"""


def standalone(chart: str) -> str:
    """A chart as an SVG file of its own: its styles inside, an XML declaration before it."""
    head, _, rest = chart.partition(">")
    return f'<?xml version="1.0" encoding="utf-8"?>\n{head}><style>{CHART_STYLE}</style>{rest}\n'


@dataclass(frozen=True)
class Series:
    """One set of points of a point chart or a time series: its legend label, values and colour."""

    label: str
    values: Sequence[float | None]
    color: str
    shape: str = "circle"  # circle, square or triangle


@dataclass(frozen=True)
class Level:
    """A horizontal line across a chart: a gate's limit, say."""

    label: str
    value: float
    color: str


@dataclass(frozen=True)
class Point:
    """One point of a scatter plot; ``color`` set marks it (the candidate, the reference)."""

    label: str
    x: float
    y: float
    color: str | None = None


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``[low, high]``: steps of 1, 2 or 5 times a power of ten."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else [0.0]
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(factor * power for factor in (1, 2, 5, 10) if factor * power >= raw)
    first = math.floor(low / step) * step
    values = []
    value = first
    while value <= high + step * 1e-9:
        values.append(round(value, 12))
        value += step
    if values[-1] < high:
        values.append(round(value, 12))
    return values


def _tick_text(value: float, values: Sequence[float]) -> str:
    step = min((abs(b - a) for a, b in zip(values, values[1:])), default=1.0) or 1.0
    # ticks are 1, 2 or 5 times a power of ten apart: that power's decimals show every tick exactly
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{value:.{min(decimals, 8)}f}"
    # a tick at a rounding error below zero is zero, not "-0.0"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


class _Canvas:
    """A plot area with a linear y scale over ``ticks`` and ``n`` slots or a linear x scale."""

    def __init__(self, title: str, y_label: str, low: float, high: float, height: int = HEIGHT) -> None:
        self.height = height
        self.y_ticks = ticks(min(low, high), max(low, high))
        self.y_low, self.y_high = self.y_ticks[0], self.y_ticks[-1]
        if self.y_high == self.y_low:
            self.y_high = self.y_low + 1.0
        self.parts = [
            f'<text x="{WIDTH / 2:.1f}" y="18" text-anchor="middle" class="chart-title">{escape(title)}</text>'
        ]
        self.parts.append(
            f'<text transform="translate(14 {(_TOP + self.bottom) / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle" class="axis-label">{escape(y_label)}</text>'
        )
        for value in self.y_ticks:
            y = self.y(value)
            self.parts.append(f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
            self.parts.append(
                f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
                f"{_tick_text(value, self.y_ticks)}</text>"
            )

    @property
    def bottom(self) -> float:
        return self.height - _BOTTOM

    def y(self, value: float) -> float:
        return self.bottom - (value - self.y_low) / (self.y_high - self.y_low) * (self.bottom - _TOP)

    def slot(self, index: int, count: int) -> float:
        """The centre of the ``index``-th of ``count`` equal slots across the plot area."""
        return _LEFT + (index + 0.5) * (WIDTH - _LEFT - _RIGHT) / max(count, 1)

    def levels(self, levels: Sequence[Level]) -> None:
        """Dashed lines across the plot, each labelled above its line at the right; a label that would overlap the
        one above it (two limits a few pixels apart) moves down below its line."""
        placed: list[float] = []
        for level in sorted(levels, key=lambda level: -level.value):
            y = self.y(level.value)
            self.parts.append(
                f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="{level.color}" '
                f'stroke-dasharray="6 4" stroke-width="1.5"><title>{escape(level.label)}</title></line>'
            )
            baseline = y - 4
            if placed and baseline < placed[-1] + _LEVEL_LABEL_HEIGHT:
                baseline = max(y + _LEVEL_LABEL_HEIGHT, placed[-1] + _LEVEL_LABEL_HEIGHT)
            placed.append(baseline)
            self.parts.append(
                f'<text x="{WIDTH - _RIGHT - 4}" y="{baseline:.1f}" text-anchor="end" class="level" '
                f'fill="{level.color}">{escape(level.label)}</text>'
            )

    def x_label(self, text: str) -> None:
        self.parts.append(
            f'<text x="{(WIDTH + _LEFT) / 2:.1f}" y="{self.height - 6}" text-anchor="middle" '
            f'class="axis-label">{escape(text)}</text>'
        )

    def legend(self, entries: Sequence[tuple[str, str, str]]) -> None:
        """``(label, colour, shape)`` entries in a row under the title."""
        x = _LEFT + 4.0
        for label, color, shape in entries:
            self.parts.append(_marker(shape, x + 5, _TOP - 14, 4.5, color, ""))
            self.parts.append(f'<text x="{x + 14:.1f}" y="{_TOP - 10}" class="tick">{escape(label)}</text>')
            x += 24 + _CHARACTER_WIDTH * len(label)

    def svg(self, description: str) -> str:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {self.height}" role="img" '
            f'class="chart"><title>{escape(description)}</title>{"".join(self.parts)}'
            f'<line x1="{_LEFT}" x2="{_LEFT}" y1="{_TOP}" y2="{self.bottom}" class="axis"/></svg>'
        )


def _marker(shape: str, x: float, y: float, size: float, color: str, title: str) -> str:
    tip = f"<title>{escape(title)}</title>" if title else ""
    if shape == "square":
        return (
            f'<rect x="{x - size:.1f}" y="{y - size:.1f}" width="{2 * size:.1f}" height="{2 * size:.1f}" '
            f'fill="{color}">{tip}</rect>'
        )
    if shape == "triangle":
        points = f"{x:.1f},{y - size * 1.2:.1f} {x - size:.1f},{y + size * 0.8:.1f} {x + size:.1f},{y + size * 0.8:.1f}"
        return f'<polygon points="{points}" fill="{color}">{tip}</polygon>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{size:.1f}" fill="{color}">{tip}</circle>'


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float(value) for value in values if value is not None and math.isfinite(float(value))]


def bar_chart(
    labels: Sequence[str], values: Sequence[float], tips: Sequence[str], *, title: str, y_label: str, x_label: str
) -> str:
    """Bars from zero in the given order, green above and red below zero (the per-topic difference plot)."""
    low, high = min([0.0, *values]), max([0.0, *values])
    canvas = _Canvas(title, y_label, low, high)
    count = len(values)
    width = max(1.0, (WIDTH - _LEFT - _RIGHT) / max(count, 1) * 0.8)
    zero = canvas.y(0.0)
    for index, (label, value, tip) in enumerate(zip(labels, values, tips)):
        y = canvas.y(value)
        color = GOOD if value > 0 else BAD if value < 0 else NEUTRAL
        canvas.parts.append(
            f'<rect x="{canvas.slot(index, count) - width / 2:.1f}" y="{min(y, zero):.1f}" '
            f'width="{width:.1f}" height="{max(abs(zero - y), 0.5):.1f}" fill="{color}" '
            f'data-topic="{escape(label)}" data-value="{value!r}"><title>{escape(tip)}</title></rect>'
        )
    canvas.parts.append(f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{zero:.1f}" y2="{zero:.1f}" class="axis"/>')
    canvas.x_label(x_label)
    return canvas.svg(title)


def point_chart(
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    y_label: str,
    x_label: str,
    highlighted: dict[str, str] | None = None,
    levels: Sequence[Level] = (),
) -> str:
    """Unjoined markers per category (systems are not a continuum), with dashed ``levels`` across.

    ``highlighted`` colours a category's axis label and shades its column (the candidate, the reference).
    """
    highlighted = highlighted or {}
    values = [value for entry in series for value in _finite(entry.values)] + [level.value for level in levels]
    canvas = _Canvas(title, y_label, min([0.0, *values]), max([0.0, *values]), HEIGHT + 60)
    count = len(categories)
    slot_width = (WIDTH - _LEFT - _RIGHT) / max(count, 1)
    for index, category in enumerate(categories):
        x = canvas.slot(index, count)
        color = highlighted.get(category)
        if color is not None:
            canvas.parts.append(
                f'<rect x="{x - slot_width / 2:.1f}" y="{_TOP}" width="{slot_width:.1f}" '
                f'height="{canvas.bottom - _TOP:.1f}" fill="{color}" opacity="0.12"/>'
            )
        if count <= MAX_CATEGORY_LABELS or color is not None:
            weight = ' font-weight="bold"' if color else ""
            canvas.parts.append(
                f'<text transform="translate({x:.1f} {canvas.bottom + 10:.1f}) rotate(-40)" '
                f'text-anchor="end" class="tick" fill="{color or "#333"}"{weight}>'
                f"{escape(category)}</text>"
            )
    canvas.levels(levels)
    size = 4.5 if count <= MAX_CATEGORY_LABELS else 2.5
    for entry in series:
        for index, (category, value) in enumerate(zip(categories, entry.values)):
            if value is not None and math.isfinite(float(value)):
                canvas.parts.append(
                    _marker(
                        entry.shape,
                        canvas.slot(index, count),
                        canvas.y(float(value)),
                        size,
                        entry.color,
                        f"{category}: {entry.label} {float(value):.6g}",
                    )
                )
    canvas.legend([(entry.label, entry.color, entry.shape) for entry in series])
    canvas.x_label(x_label)
    return canvas.svg(title)


def line_chart(
    xs: Sequence[float], series: Sequence[Series], *, title: str, y_label: str, x_label: str, low: float, high: float
) -> str:
    """Each series joined over evenly spaced ``xs`` (a sweep of a parameter), with a marker at each point, on the y
    range ``low`` to ``high`` (a correlation's -1 to 1, whatever the values)."""
    canvas = _Canvas(title, y_label, low, high)
    count = len(xs)
    for entry in series:
        points = [
            (canvas.slot(index, count), canvas.y(float(value)), x, value)
            for index, (x, value) in enumerate(zip(xs, entry.values))
            if value is not None and math.isfinite(float(value))
        ]
        if len(points) > 1:
            canvas.parts.append(
                f'<polyline points="{" ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in points)}" fill="none" '
                f'stroke="{entry.color}" stroke-width="1.5"/>'
            )
        for px, py, x, value in points:
            canvas.parts.append(_marker(entry.shape, px, py, 3.5, entry.color, f"{x:g}: {entry.label} {value:.4g}"))
    shown = range(count) if count <= 12 else sorted({0, count - 1, *range(0, count, math.ceil(count / 10))})
    for index in shown:
        canvas.parts.append(
            f'<text x="{canvas.slot(index, count):.1f}" y="{canvas.bottom + 16:.1f}" text-anchor="middle" '
            f'class="tick">{xs[index]:.3g}</text>'
        )
    canvas.legend([(entry.label, entry.color, entry.shape) for entry in series])
    canvas.x_label(x_label)
    return canvas.svg(title)


def scatter_chart(
    points: Sequence[Point], *, title: str, x_label: str, y_label: str, corner_note: str = "", label_all: bool = True
) -> str:
    """A scatter plot from the origin; ``corner_note`` is written in the lower-left corner with an arrow to it."""
    canvas = _Canvas(title, y_label, 0.0, max([0.0, *(point.y for point in points)]))
    x_ticks = ticks(0.0, max([0.0, *(point.x for point in points)]) or 1.0)
    x_high = x_ticks[-1] or 1.0

    def x_of(value: float) -> float:
        return _LEFT + value / x_high * (WIDTH - _LEFT - _RIGHT)

    for value in x_ticks:
        x = x_of(value)
        canvas.parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP}" y2="{canvas.bottom}" class="grid"/>')
        canvas.parts.append(
            f'<text x="{x:.1f}" y="{canvas.bottom + 16}" text-anchor="middle" class="tick">'
            f"{_tick_text(value, x_ticks)}</text>"
        )
    if corner_note:
        canvas.parts.append(
            f'<text x="{_LEFT + 8}" y="{canvas.bottom - 8}" class="corner-note">↙ {escape(corner_note)}</text>'
        )
    for point in sorted(points, key=lambda point: point.color is not None):  # marked points on top
        x, y = x_of(point.x), canvas.y(point.y)
        tip = f"{point.label}: {x_label} {point.x:.6g}, {y_label} {point.y:.6g}"
        canvas.parts.append(_marker("circle", x, y, 7 if point.color else 4, point.color or NEUTRAL, tip))
        if point.color or label_all:
            right = x + 8 + _CHARACTER_WIDTH * len(point.label) <= WIDTH
            anchor = "start" if right else "end"
            canvas.parts.append(
                f'<text x="{x + 8 if right else x - 8:.1f}" y="{y - 6:.1f}" text-anchor="{anchor}" class="tick" '
                f'fill="{point.color or "#444"}">{escape(point.label)}</text>'
            )
    canvas.x_label(x_label)
    return canvas.svg(title)


def time_chart(
    times: Sequence[str],
    series: Series,
    limits: Sequence[float | None],
    outcomes: Sequence[str],
    *,
    title: str,
    y_label: str,
    breaks: Sequence[int] = (),
) -> str:
    """A value over successive records (joined: it is one quantity over time) and its limit as a dashed step line;
    each point is coloured by its outcome. At each of ``breaks`` (records evaluated with other judgments than the
    one before) the line is cut and a dotted vertical line says so: values across it are not comparable."""
    values = _finite(series.values) + _finite(limits)
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    pad = (high - low) * 0.1 or abs(high) * 0.1 or 1.0
    canvas = _Canvas(title, y_label, low - pad, high + pad)
    count = len(times)
    limit_points = [
        (canvas.slot(i, count), canvas.y(float(limit)))
        for i, limit in enumerate(limits)
        if limit is not None and math.isfinite(float(limit))
    ]
    half = (WIDTH - _LEFT - _RIGHT) / max(count, 1) / 2
    if limit_points:
        # a step line: each record's limit across its slot
        (first_x, first_y), rest = limit_points[0], limit_points[1:]
        path = f"M{first_x - half:.1f},{first_y:.1f} H{first_x + half:.1f}" + "".join(
            f" V{y:.1f} H{x + half:.1f}" for x, y in rest
        )
        canvas.parts.append(
            f'<path d="{path}" fill="none" stroke="{BAD}" stroke-dasharray="6 4" stroke-width="1.5">'
            f"<title>limit</title></path>"
        )
    for start, stop in zip((0, *breaks), (*breaks, count)):
        joined = [
            (canvas.slot(i, count), canvas.y(float(series.values[i])))
            for i in range(start, stop)
            if series.values[i] is not None and math.isfinite(float(series.values[i]))
        ]
        if len(joined) > 1:
            canvas.parts.append(
                f'<polyline points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in joined)}" fill="none" '
                f'stroke="{series.color}" stroke-width="1.5"/>'
            )
    for index in breaks:
        x = canvas.slot(index, count) - half
        canvas.parts.append(
            f'<line class="judgments-changed" x1="{x:.1f}" x2="{x:.1f}" y1="{_TOP}" '
            f'y2="{canvas.bottom:.1f}" stroke="{NEUTRAL}" stroke-dasharray="2 3" stroke-width="1.5">'
            f"<title>the qrels changed here: values before and after are not comparable</title></line>"
        )
    colors = {"OK": GOOD, "OK*": "#ef6c00", "UNDECIDED": "#ef6c00", "FAIL": BAD}
    for index, (time, value, outcome) in enumerate(zip(times, series.values, outcomes)):
        if value is not None and math.isfinite(float(value)):
            canvas.parts.append(
                _marker(
                    "circle",
                    canvas.slot(index, count),
                    canvas.y(float(value)),
                    4.5,
                    colors.get(outcome, NEUTRAL),
                    f"{time}: {float(value):.6g} ({outcome})",
                )
            )
    shown = range(count) if count <= 12 else sorted({0, count - 1, *range(0, count, math.ceil(count / 10))})
    for index in shown:
        canvas.parts.append(
            f'<text transform="translate({canvas.slot(index, count):.1f} {canvas.bottom + 10:.1f}) '
            f'rotate(-30)" text-anchor="end" class="tick">'
            f"{escape(times[index][:16].replace('T', ' '))}</text>"
        )
    canvas.legend(
        [(series.label, series.color, "circle"), ("limit", BAD, "square")]
        + ([("qrels changed", NEUTRAL, "square")] if breaks else [])
    )
    return canvas.svg(title)
