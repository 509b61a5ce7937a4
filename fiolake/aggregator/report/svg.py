"""Small charts as inline SVG text for the HTML report (`gate_report`): the ratio chart
with CI whiskers, and line charts (latency percentile curves, per-second series).

Hand-written rather than Altair + vl-convert: each chart is a few rects, lines, polylines
and texts, so a page of them needs no JavaScript engine, no extra dependency and no
network, and the markup is small and predictable (tests count its elements). Values
arrive in raw units; the caller passes the formatter for tick labels (the edge formats).
Tooltips are SVG <title> elements: the browser shows them without a script.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fiolake.aggregator.stats.verdict_text import INCONCLUSIVE, VERDICT_COLOURS

FONT = 'font-family="system-ui, sans-serif" font-size="11"'


@dataclass(frozen=True)
class Whisker:
    """One gate row on the ratio chart: its ratio NEW / baseline and its 95 % CI."""

    label: str
    ratio: float
    low: float | None
    high: float | None
    verdict: str  # a key of VERDICT_COLOURS (others are drawn as inconclusive)
    tooltip: str


@dataclass(frozen=True)
class Line:
    """One polyline of a line chart (points in raw units, x ascending)."""

    name: str
    points: Sequence[tuple[float, float]]
    colour: str
    dashed: bool = False


@dataclass(frozen=True)
class Axis:
    """How one axis maps values: log or linear, its ticks and their labels."""

    log: bool
    fmt: Callable[[float], str]
    ticks: Sequence[float] = ()  # empty: chosen from the data's range
    title: str = ""
    whole: bool = False  # chosen ticks are integers (seconds)


class _Scale:
    """Maps a value range to a pixel range, linearly or on log10."""

    def __init__(self, lo: float, hi: float, a: float, b: float, log: bool) -> None:
        self.log = log
        self.lo, self.hi = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
        if self.hi <= self.lo:  # one value: give it a range to sit in the middle of
            self.lo, self.hi = self.lo - 0.5, self.hi + 0.5
        self.a, self.b = a, b

    def __call__(self, v: float) -> float:
        t = math.log10(v) if self.log else v
        return self.a + (t - self.lo) / (self.hi - self.lo) * (self.b - self.a)

    def contains(self, v: float) -> bool:
        t = math.log10(v) if self.log else v
        return self.lo - 1e-9 <= t <= self.hi + 1e-9


def _ticks(lo: float, hi: float, log: bool, whole: bool = False) -> list[float]:
    """Round ticks in [lo, hi]: 1-2-5 steps (per decade on a log axis, finer when the
    range is within a decade, as ratios near 1× are), about five; `whole`: integers."""
    if log:
        found: list[float] = []
        for mults in ((1.0,), (1.0, 3.0), (1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 5.0, 7.0),
                      (1.0, 1.2, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)):  # fmt: skip
            found = [
                float(f"{m * 10.0**e:.6g}")  # 7 × 10⁻¹ is 0.7000000000000001
                for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                for m in mults
                if lo <= m * 10.0**e <= hi
            ]
            if len(found) >= 3:
                break
        return found or [lo, hi]
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / 5
    step = 10.0 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if step * m >= raw)
    step = max(step, 1.0) if whole else step
    return [i * step for i in range(math.ceil(lo / step), math.floor(hi / step) + 1)]


def _open(width: int, height: int, kind: str, label: str) -> list[str]:
    e = html.escape
    return [
        # No xmlns: inline in HTML the parser knows it is SVG (and the page names no URL).
        f'<svg class="chart {kind}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{e(label)}">',
        f"<title>{e(label)}</title>",
    ]


def _text(x: float, y: float, text: str, anchor: str = "start", extra: str = "") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT}{extra}>'
        f"{html.escape(text)}</text>"
    )


def ratio_chart(rows: Sequence[Whisker], min_effect: float, width: int = 640) -> str:
    """One line per row: the ratio as a dot, its 95 % CI as a whisker, on a log axis
    centred on 1× (no change), the ±min-effect band shaded, coloured by verdict."""
    left, right, top, step = 230, 20, 24, 20
    height = top + step * max(len(rows), 1) + 34
    band = (1 / (1 + min_effect), 1 + min_effect)  # symmetric in logs, as the verdicts
    values = [band[0], band[1]]
    values += [v for r in rows for v in (r.ratio, r.low, r.high) if v is not None and v > 0]
    lo, hi = min(values) / 1.1, max(values) * 1.1
    x = _Scale(lo, hi, left, width - right, log=True)
    bottom = height - 34
    out = _open(width, height, "ratio", "ratio new / baseline with 95 % CI, log axis")
    out.append(
        f'<rect x="{x(band[0]):.1f}" y="{top - 6}" width="{x(band[1]) - x(band[0]):.1f}" '
        f'height="{bottom - top + 6}" fill="#eeeeee"><title>±{min_effect:.0%} minimum '
        "effect</title></rect>"
    )
    for t in _ticks(lo, hi, log=True):
        out.append(
            f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{bottom}" '
            f'stroke="{"#555" if t == 1 else "#ddd"}"/>'
        )
        out.append(_text(x(t), bottom + 14, f"{t:g}×", "middle"))
    out.append(_text((left + width - right) / 2, bottom + 29, "new / baseline (log)", "middle"))
    for i, r in enumerate(rows):
        y = top + step * i + step / 2 - 4
        colour = VERDICT_COLOURS.get(r.verdict, VERDICT_COLOURS[INCONCLUSIVE])
        out.append(_text(left - 8, y + 4, r.label, "end"))
        tip = f"<title>{html.escape(r.tooltip)}</title>"
        if r.low is not None and r.high is not None and r.low > 0:
            x1, x2 = x(r.low), x(r.high)
            out.append(
                f'<g class="whisker" stroke="{colour}" stroke-width="1.5">{tip}'
                f'<line x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}"/>'
                f'<line x1="{x1:.1f}" y1="{y - 4:.1f}" x2="{x1:.1f}" y2="{y + 4:.1f}"/>'
                f'<line x1="{x2:.1f}" y1="{y - 4:.1f}" x2="{x2:.1f}" y2="{y + 4:.1f}"/></g>'
            )
        if r.ratio > 0:
            out.append(
                f'<circle class="ratio" cx="{x(r.ratio):.1f}" cy="{y:.1f}" r="4" '
                f'fill="{colour}">{tip}</circle>'
            )
    out.append("</svg>")
    return "".join(out)


def line_chart(
    lines: Sequence[Line], x_axis: Axis, y_axis: Axis, title: str, kind: str, width: int = 420
) -> str:
    """Lines over shared axes, a legend under the plot; `kind` names the chart in its
    class (`chart latency`, `chart series`) so the page's parts can be told apart."""
    left, right, top, plot_h = 64, 14, 22, 150
    legend_top = top + plot_h + 36
    height = legend_top + 14 * len(lines) + 4
    # A line with nothing to draw (a side without data) gets no polyline and no legend.
    lines = [line for line in lines if any(_drawable(p, x_axis, y_axis) for p in line.points)]
    points = [p for line in lines for p in line.points if _drawable(p, x_axis, y_axis)]
    out = _open(width, height, kind, title)
    out.append(_text(left, 13, title, extra=' font-weight="bold"'))
    if not points:
        out.append(_text(left, top + plot_h / 2, "no data", extra=' fill="#888"'))
        out.append("</svg>")
        return "".join(out)
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    y_lo = min(ys) / 1.2 if y_axis.log else min(0.0, min(ys))  # linear: from zero
    y_hi = max(ys) * 1.2 if y_axis.log else max(ys) * 1.1 or 1.0
    x = _Scale(min(xs), max(xs), left, width - right, x_axis.log)
    y = _Scale(y_lo, y_hi, top + plot_h, top, y_axis.log)
    bottom = top + plot_h
    out.append(
        f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{plot_h}" '
        'fill="none" stroke="#bbb"/>'
    )
    for t in y_axis.ticks or _ticks(y_lo, y_hi, y_axis.log):
        if y.contains(t):
            out.append(
                f'<line x1="{left}" y1="{y(t):.1f}" x2="{width - right}" y2="{y(t):.1f}" '
                'stroke="#eee"/>'
            )
            out.append(_text(left - 4, y(t) + 4, y_axis.fmt(t), "end"))
    for t in x_axis.ticks or _ticks(min(xs), max(xs), x_axis.log, x_axis.whole):
        if x.contains(t):
            out.append(_text(x(t), bottom + 14, x_axis.fmt(t), "middle"))
    out.append(_text((left + width - right) / 2, bottom + 28, x_axis.title, "middle"))
    out.append(_text(4, top - 8, y_axis.title))
    for i, line in enumerate(lines):
        drawn = " ".join(
            f"{x(px):.1f},{y(py):.1f}"
            for px, py in line.points
            if _drawable((px, py), x_axis, y_axis)
        )
        dash = ' stroke-dasharray="5 3"' if line.dashed else ""
        name = html.escape(line.name)
        out.append(
            f'<polyline points="{drawn}" fill="none" stroke="{line.colour}" '
            f'stroke-width="1.5"{dash}><title>{name}</title></polyline>'
        )
        ly = legend_top + 14 * i
        out.append(
            f'<line x1="{left}" y1="{ly - 4}" x2="{left + 18}" y2="{ly - 4}" '
            f'stroke="{line.colour}" stroke-width="2"{dash}/>'
        )
        out.append(_text(left + 24, ly, line.name))
    out.append("</svg>")
    return "".join(out)


def _drawable(point: tuple[float, float], x_axis: Axis, y_axis: Axis) -> bool:
    """Finite, and positive on a log axis (log of zero has no place on the chart)."""
    px, py = point
    if not (math.isfinite(px) and math.isfinite(py)):
        return False
    return (px > 0 or not x_axis.log) and (py > 0 or not y_axis.log)
