"""Chart pieces every page shares: container width, ISO 24-h UTC times, run labels,
verdict colours and the ratio chart (log axis, CI whiskers, adjusted p on hover)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from fiolake.aggregator.report.headline import ProfileRatio
from fiolake.aggregator.stats.compare import BASELINE, Comparison
from fiolake.aggregator.stats.verdict_text import NOT_TESTED, VERDICT_COLOURS, mark
from fiolake.timetext import MINUTES_FORMAT, iso_utc

ROW_PX = 22  # height per bar / line label: labels never overlap
LABEL_LIMIT = 420  # px of an axis label before Vega truncates it with …


def when(at: datetime | None) -> str:
    """`2025-03-01T12:00Z`: fiolake's time text for people (the lake's timestamps are UTC)."""
    return "" if at is None else iso_utc(at, "minutes")


def run_label(backend: str, repetition: int | None, started_at: datetime | None) -> str:
    """How a run is named on every chart: `disk · rep 1 · 2025-03-01T12:00Z`."""
    rep = "rep ?" if repetition is None else f"rep {repetition}"
    return f"{backend} · {rep} · {when(started_at)}"


def time_axis(field: str, title: str = "started") -> alt.X:
    """An x axis of timestamps, labelled as `when` writes them (ISO 8601, UTC)."""
    return alt.X(
        f"{field}:T",
        title=f"{title} (UTC)",
        axis=alt.Axis(format=MINUTES_FORMAT, labelAngle=-30, labelOverlap=True),
        scale=alt.Scale(type="utc"),
    )


# What `show` draws: any chart Altair composes.
AnyChart = (
    alt.Chart
    | alt.LayerChart
    | alt.FacetChart
    | alt.ConcatChart
    | alt.HConcatChart
    | alt.VConcatChart
)


def show(chart: AnyChart, **kwargs: Any) -> Any:
    """Draw `chart` across the container's width."""
    return st.altair_chart(chart, width="stretch", **kwargs)


def backend_colour(field: str = "backend") -> alt.Color:
    """One distinct categorical colour per backend, legend on top."""
    return alt.Color(
        f"{field}:N", scale=alt.Scale(scheme="tableau10"), legend=alt.Legend(orient="top")
    )


def verdict_colour() -> alt.Color:
    """Verdict colours, always the same for the same verdict."""
    names = list(VERDICT_COLOURS)
    return alt.Color(
        "verdict:N",
        scale=alt.Scale(domain=names, range=[VERDICT_COLOURS[n] for n in names]),
        legend=alt.Legend(orient="top", title=None),
    )


def _ratio_row(
    case: str,
    metric: str,
    backend: str,
    ratio: float,
    span: tuple[float | None, float | None],
    verdict: str,
    p_adjusted: float | None,
    runs: str,
) -> dict[str, Any]:
    low, high = span
    return {
        "case": case,
        "metric": metric,
        "backend": backend,
        "ratio": ratio,
        "low": low if low is not None else ratio,
        "high": high if high is not None else ratio,
        "verdict": verdict if verdict in VERDICT_COLOURS else NOT_TESTED,
        "p (adjusted)": None if p_adjusted is None else float(f"{p_adjusted:.2g}"),
        "runs": runs,
        "label": f"{backend} {mark(verdict)}",  # the verdict in words beside its bar
        "one": 1.0,
    }


def ratio_frame(result: Comparison) -> pd.DataFrame:
    """One row per backend × case other than the baseline, ready for `ratio_chart`."""
    return pd.DataFrame(
        _ratio_row(
            f"{r.profile} · {r.direction}"
            if r.job_name == r.profile
            else f"{r.profile} · {r.job_name} · {r.direction}",
            r.metric,
            r.group,
            r.ratio,
            (r.ratio_ci_low, r.ratio_ci_high),
            r.verdict,
            r.p_adjusted,
            f"{r.n} vs {r.n_baseline}",
        )  # fmt: skip
        for r in result.rows
        if r.verdict != BASELINE and r.ratio is not None
    )


def profile_ratio_frame(ratios: list[ProfileRatio]) -> pd.DataFrame:
    """`ratio_chart` rows from the landing page's per-profile ratios."""
    return pd.DataFrame(
        _ratio_row(
            pr.profile,
            pr.metric,
            pr.backend,
            pr.ratio,
            (pr.low, pr.high),
            pr.verdict,
            pr.p_adjusted,
            f"{pr.cases} case(s)",
        )  # fmt: skip
        for pr in ratios
    )


def ratio_chart(frame: pd.DataFrame, baseline: str, metric: str) -> AnyChart:
    """Horizontal ratio bars from 1 (the baseline) on a log axis, one row per case ×
    backend, whiskers for the 95 % CI, coloured by verdict; hover for the adjusted p."""
    data = frame[frame["metric"] == metric]
    lo, hi = float(data["low"].min()), float(data["high"].max())
    domain = [min(lo, 1.0) / 1.25, max(hi, 1.0) * 1.25]
    y = alt.Y(
        "case:N",
        title=None,
        axis=alt.Axis(labelLimit=LABEL_LIMIT),
        sort=sorted(set(data["case"])),
    )
    x = alt.X(
        "ratio:Q",
        title=f"{metric}: ratio to {baseline} (log scale; 1 = same)",
        scale=alt.Scale(type="log", domain=domain),
    )
    tooltip = ["backend", "case", "ratio", "low", "high", "p (adjusted)", "verdict", "runs"]
    base = alt.Chart(data).encode(y=y, yOffset=alt.YOffset("backend:N"))
    bars = base.mark_bar(height=alt.RelativeBandSize(0.7)).encode(
        x=x, x2="one:Q", color=verdict_colour(), tooltip=tooltip
    )
    whiskers = base.mark_rule(color="black").encode(x="low:Q", x2="high:Q", tooltip=tooltip)
    labels = base.mark_text(align="left", dx=4, fontSize=11).encode(x="high:Q", text="label:N")
    one = alt.Chart(pd.DataFrame({"one": [1.0]})).mark_rule(strokeDash=[4, 3]).encode(x="one:Q")
    # A step per row: the chart grows with its rows and labels never overlap.
    return alt.layer(bars, whiskers, labels, one).properties(height=alt.Step(ROW_PX))
