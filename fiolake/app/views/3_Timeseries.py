"""Per-second lines of several runs overlaid: warm-up shaded, the steady window marked,
seconds without I/O shown, per-second latency percentiles when the lake has them."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fiolake.aggregator.lake.columns import display_scale
from fiolake.aggregator.rows.latency import profiles_by_runs
from fiolake.aggregator.rows.series import (
    PERCENTILE_SERIES,
    SERIES_METRICS,
    per_second,
    recent_runs,
    steady_marks,
)
from fiolake.app.charts import run_label, show
from fiolake.app.common import get_lake, run_or_stop
from fiolake.app.defaults import newest_per_backend
from fiolake.steady import WINDOW

st.set_page_config(page_title="fiolake · Timeseries", layout="wide")
st.title("Per-second timeseries")
lake = get_lake()

runs = run_or_stop(recent_runs, lake)
labels = {r[0]: f"{run_label(r[1], r[5], r[4])} · {r[2]}" for r in runs}
# By default: the newest run of each backend in the most-run profile (newest first).
top = next(iter(run_or_stop(profiles_by_runs, lake)), None)
left, right = st.columns([4, 1])
chosen = left.multiselect(
    "Runs",
    list(labels),
    default=newest_per_backend(runs, top),
    format_func=lambda rid: labels[rid],
    key="run",
    bind="query-params",
)
metric = right.selectbox(
    "Series", SERIES_METRICS + PERCENTILE_SERIES, key="series", bind="query-params"
)
if not chosen:
    st.info("Pick one or more runs.")
    st.stop()

points = run_or_stop(per_second, lake, chosen, metric)
if not points or all(p.value is None for p in points):
    what = "per-second percentiles (fio's histogram log)" if metric in PERCENTILE_SERIES else metric
    st.info(f"These runs have no {what} in the lake.")
    st.stop()
divisor, unit = display_scale(metric, max((p.value or 0.0) for p in points))
several_jobs = len({(p.job_name, p.direction) for p in points}) > len(set(chosen))


def series_name(run_id: str, job: str, direction: str) -> str:
    base = labels.get(run_id, run_id).rsplit(" · ", 1)[0]
    return f"{base} · {job} · {direction}" if several_jobs else f"{base} · {direction}"


frame = pd.DataFrame(
    {
        "second": p.second,
        "value": None if p.value is None else p.value / divisor,
        "run": series_name(p.run_id, p.job_name, p.direction),
        "zero": p.zero_filled,
        "partial": p.partial,
    }
    for p in points
)
positive = frame["value"][frame["value"] > 0]
spread = positive.max() / positive.min() if len(positive) else 1.0
log = st.toggle("Log axis", value=bool(spread > 20), key="log", bind="query-params")
frame["plotted"] = frame["value"].where(frame["value"] > 0) if log else frame["value"]
floor = float(positive.min()) / 2 if log and len(positive) else 0.0
frame["floor"] = floor

title = f"{metric} ({unit})" if unit else metric
x = alt.X(
    "second:Q",
    title="second of the job",
    scale=alt.Scale(nice=False),
    axis=alt.Axis(tickMinStep=1, format="d"),
)
y = alt.Y("plotted:Q", title=title + (", log scale" if log else ""))
if log:
    y = alt.Y("plotted:Q", title=f"{title}, log scale", scale=alt.Scale(type="log"))
colour = alt.Color(
    "run:N",
    scale=alt.Scale(scheme="tableau10"),
    legend=alt.Legend(orient="bottom", columns=2, labelLimit=600, title=None),
)
lines = (
    alt.Chart(frame)
    .mark_line(point=alt.OverlayMarkDef(size=25))
    .encode(x=x, y=y, color=colour, tooltip=["run", "second", "value", "partial"])
)
zeros = (
    alt.Chart(frame[frame["zero"]])
    .mark_point(shape="triangle-down", color="#d73027", size=70, filled=True)
    .encode(x="second:Q", y="floor:Q", tooltip=["run", "second"])
)

marks = run_or_stop(steady_marks, lake, chosen)
shade = pd.DataFrame(
    {"run": series_name(m.run_id, m.job_name, m.direction), "from": 0, "to": m.warmup_s}
    for m in marks
    if m.warmup_s
)
steady = pd.DataFrame(
    {
        "run": series_name(m.run_id, m.job_name, m.direction),
        "from": m.seconds - WINDOW,
        "to": m.seconds,
    }
    for m in marks
    if m.steady_state
)
layers: list[alt.Chart] = []
if not shade.empty:
    layers.append(
        alt.Chart(shade)
        .mark_rect(opacity=0.08)
        .encode(
            x="from:Q",
            x2="to:Q",
            color=colour,
            tooltip=["run", alt.Tooltip("to:Q", title="warm-up s")],
        )
    )
if not steady.empty:
    layers.append(
        alt.Chart(steady)
        .mark_rule(strokeWidth=6, opacity=0.6)
        .encode(x="from:Q", x2="to:Q", y=alt.value(4), color=colour, tooltip=["run", "from", "to"])
    )
layers += [lines, zeros]
# Streamlit sizes the whole chart, legend included: room for the plot plus legend rows.
legend_rows = (frame["run"].nunique() + 1) // 2
show(alt.layer(*layers).properties(height=380 + 26 * legend_rows))

st.caption(
    "One line per run × job × direction (threads summed; latency: mean of threads, "
    "percentiles: the worst thread). Shaded: warm-up (seconds before the first steady "
    f"{WINDOW}-s window); thick bar on top: the steady-state window of runs that ended "
    "steady (SNIA PTS rule, docs/statistics.md); ▼ at the bottom: seconds fio logged no "
    "I/O (zero-filled). The last second of a job is often partial (hover)."
)
