"""Latency per backend: percentile curves, the json+ distribution, latency against IOPS."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fiolake.aggregator.lake.columns import display_scale, nines
from fiolake.aggregator.rows import latency
from fiolake.aggregator.rows.series import distinct
from fiolake.app.charts import backend_colour, show
from fiolake.app.common import get_lake, run_or_stop
from fiolake.app.defaults import latency_filter, profile_filter, sweep_index

ALL_CAMPAIGNS = "all campaigns"


def _label_expr(ticks: list[float]) -> str:
    pairs = [f"abs(datum.value - {nines(t)}) < 0.01 ? 'p{t:g}'" for t in ticks]
    return " : ".join(pairs) + " : ''"


st.set_page_config(page_title="fiolake · Latency", layout="wide")
st.title("Latency")
lake = get_lake()

# Cached per lake state like the charts: at 100,000 runs each of these reads every run.
profiles = run_or_stop(latency.profiles_by_runs, lake)
backends_all = run_or_stop(distinct, lake, "backend", "status = 'ok'")
left, camp_col, mid, job_col, right = st.columns([2, 2, 3, 2, 1])
profile = left.selectbox("Profile", profiles, key="profile", bind="query-params")
# The newest campaign first (as Home): every run of a profile is one click away, but
# an exact median over all of them is slow on a big lake (aggregator.rows.latency.campaigns_of).
campaigns = run_or_stop(latency.campaigns_of, lake, profile) if profile else []
campaign = camp_col.selectbox(
    "Campaign", [*campaigns, ALL_CAMPAIGNS], key="campaign", bind="query-params"
)
backends = mid.multiselect(
    "Backends", backends_all, default=backends_all, key="backend", bind="query-params"
)
jobs = run_or_stop(latency.jobs_of, lake, profile) if profile else []
job = job_col.selectbox("Job", jobs, key="job", bind="query-params")
lat_type = right.selectbox("Latency", latency.LAT_TYPES, key="lat", bind="query-params")
if not backends or profile is None or job is None:
    st.info("Pick a profile, a job and at least one backend.")
    st.stop()
scope = None if campaign == ALL_CAMPAIGNS else campaign
filt = latency_filter(backends, profile, scope)
where = f"campaign {scope}" if scope else "all campaigns"


st.subheader("Latency by percentile")
curves = [
    p for p in run_or_stop(latency.percentile_curves, lake, filt, lat_type) if p.job_name == job
]
if not curves:
    st.info(f"No {lat_type} percentiles for these runs (fio reports clat unless asked).")
else:
    div, unit = display_scale("clat_mean_ns", max(p.value_ns for p in curves))
    frame = pd.DataFrame(
        {
            "backend": p.backend,
            "direction": p.direction,
            "percentile": p.percentile,
            "nines": nines(p.percentile),
            "latency": p.value_ns / div,
            "runs": p.runs,
        }
        for p in curves
    )
    ticks = [50, 90, 99, 99.9, 99.99]
    chart = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "nines:Q",
                title="percentile",
                axis=alt.Axis(
                    values=[nines(t) for t in ticks],
                    labelExpr=_label_expr(ticks),
                ),
            ),
            y=alt.Y(
                "latency:Q", title=f"{lat_type} ({unit}, log scale)", scale=alt.Scale(type="log")
            ),
            color=backend_colour(),
            strokeDash=alt.StrokeDash("direction:N", legend=alt.Legend(orient="top")),
            tooltip=[
                "backend",
                "direction",
                "percentile",
                alt.Tooltip("latency:Q", format=".3g"),
                "runs",
            ],
        )
        .properties(height=360)
    )
    show(chart)
    st.caption(
        f"fio's own percentiles (p1 … p99.99) of {lat_type}, median over the runs of each "
        f"backend ({where}); latency in {unit}."
    )

st.subheader("Distribution (fio json+ bins)")
found = [b for b in run_or_stop(latency.bins, lake, filt, lat_type) if b.job_name == job]
if not found:
    st.info("No json+ bins for these runs: fio was run without --output-format=json+.")
else:
    div, unit = display_scale("clat_mean_ns", max(b.value_ns for b in found))
    frame = pd.DataFrame(
        {
            "backend": b.backend,
            "direction": b.direction,
            "latency": b.value_ns / div,
            "count": b.count,
        }
        for b in found
    )
    frame["share"] = frame["count"] / frame.groupby(["backend", "direction"])["count"].transform(
        "sum"
    )
    frame["cumulative"] = frame.groupby(["backend", "direction"])["share"].cumsum()
    x = alt.X("latency:Q", title=f"{lat_type} ({unit}, log scale)", scale=alt.Scale(type="log"))
    colour = backend_colour()
    dash = alt.StrokeDash("direction:N", legend=alt.Legend(orient="top"))

    def _steps(field: str, title: str, name: str) -> alt.Chart:
        y = alt.Y(f"{field}:Q", title=title, axis=alt.Axis(format="%"))
        return (
            alt.Chart(frame)
            .mark_line(interpolate="step-after")
            .encode(x=x, y=y, color=colour, strokeDash=dash)
            .properties(height=260, title=name)
        )

    hist = _steps("share", "share of I/Os", "Histogram")
    cdf = _steps("cumulative", "I/Os at or below", "CDF")
    show(alt.hconcat(hist, cdf).resolve_scale(color="shared"))
    samples = frame.groupby("backend")["count"].sum()
    st.caption(
        "Fidelity: fio's log-linear histogram, "
        f"{latency.BUCKETS_PER_OCTAVE} buckets per power of two, so each value is known to "
        f"within 1/{latency.BUCKETS_PER_OCTAVE} of its power of two (bucket midpoints "
        "shown); every I/O is counted, not sampled: "
        + ", ".join(f"{b} {n:,} I/Os" for b, n in samples.items())
        + "."
    )

st.subheader("Latency against IOPS across a sweep")
sweeps = run_or_stop(latency.sweep_profiles, lake)
if not sweeps:
    st.info("No sweep profile in the lake (run iodepth-sweep or bs-sweep).")
    st.stop()
sweep_profile = st.selectbox(
    "Sweep profile",
    sweeps,
    index=sweep_index(sweeps),
    key="sweep",
    bind="query-params",
)
points = run_or_stop(latency.sweep, lake, profile_filter(backends, sweep_profile))
div, unit = display_scale("clat_mean_ns", max((p.clat_p99_ns or 0) for p in points))
frame = pd.DataFrame(
    {
        "backend": p.backend,
        "direction": p.direction,
        "job": p.job_name,
        "order": i,
        "iops": p.iops,
        "mean": None if p.clat_mean_ns is None else p.clat_mean_ns / div,
        "p99": None if p.clat_p99_ns is None else p.clat_p99_ns / div,
        "runs": p.runs,
    }
    for i, p in enumerate(points)
)
long = frame.melt(
    id_vars=["backend", "direction", "job", "order", "iops", "runs"],
    value_vars=["mean", "p99"],
    var_name="latency",
    value_name="value",
)
base = alt.Chart(long).encode(
    x=alt.X("iops:Q", title="IOPS (log scale)", scale=alt.Scale(type="log")),
    y=alt.Y(
        "value:Q", title=f"completion latency ({unit}, log scale)", scale=alt.Scale(type="log")
    ),
    color=backend_colour(),
    strokeDash=alt.StrokeDash("latency:N", legend=alt.Legend(orient="top", title=None)),
    detail="direction:N",
    order="order:Q",
    tooltip=[
        "backend",
        "job",
        "direction",
        alt.Tooltip("iops:Q", format=",.0f"),
        "latency",
        alt.Tooltip("value:Q", format=".3g"),
        "runs",
    ],
)
chart = base.mark_line(point=True)
if frame["job"].nunique() <= 8:  # more labels than that overlap: hover instead
    chart += base.mark_text(align="left", dx=6, dy=-6, fontSize=10).encode(text="job:N")
show(chart.properties(height=360))
st.caption(
    f"Each point is one job of {sweep_profile} (mean over runs); lines follow the sweep's order. "
    "Where IOPS stop growing and latency climbs, the device is saturated."
)
