"""IOPS at a latency SLO: how much load each backend takes before its latency breaks."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fiolake.aggregator.lake.columns import display_scale
from fiolake.aggregator.report.saturation_text import (
    iops_text,
    knee_text,
    row_for,
    sentences,
    verdict,
)
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.latency import campaigns_of
from fiolake.aggregator.rows.series import distinct
from fiolake.aggregator.rows.sweeps import load_sweep_profiles
from fiolake.aggregator.stats.saturation import saturation
from fiolake.aggregator.stats.slo import DEFAULT_SLO, parse_slo
from fiolake.aggregator.stats.stats import DEFAULT_MIN_EFFECT
from fiolake.app.charts import backend_colour, show
from fiolake.app.common import call_or_stop, get_lake, run_or_stop

ALL_CAMPAIGNS = "all campaigns"

st.set_page_config(page_title="fiolake · Saturation", layout="wide")
st.title("Saturation: IOPS at a latency SLO")
lake = get_lake()

sweeps = run_or_stop(load_sweep_profiles, lake)
if not sweeps:
    st.info(
        "No load sweep in the lake: run one, e.g. `fiolake run latency-at-load --repeat 5` "
        "on each backend (or iodepth-sweep)."
    )
    st.stop()
top = st.columns([2, 2, 1, 3, 2])
default = sweeps.index("latency-at-load") if "latency-at-load" in sweeps else 0
profile = top[0].selectbox("Sweep", sweeps, index=default, key="profile", bind="query-params")
campaigns = run_or_stop(campaigns_of, lake, profile)
campaign = top[1].selectbox(
    "Campaign", [*campaigns, ALL_CAMPAIGNS], key="campaign", bind="query-params"
)
slo_text = top[2].text_input("SLO", DEFAULT_SLO, key="slo", bind="query-params")
backends_all = run_or_stop(distinct, lake, "backend", "status = 'ok'")
backends = top[3].multiselect(
    "Backends", backends_all, default=backends_all, key="backend", bind="query-params"
)
baseline = top[4].selectbox(
    "Baseline", sorted(backends), key="baseline", bind="query-params"
)  # fmt: skip
if not backends or baseline is None:
    st.info("Pick at least one backend.")
    st.stop()
slo = call_or_stop(parse_slo, slo_text)
scope = None if campaign == ALL_CAMPAIGNS else campaign
filt = RunFilter(backends=tuple(backends), profile=profile, campaign=scope)
report = run_or_stop(saturation, lake, slo, filt=filt, baseline=baseline)

for sentence in sentences(report, DEFAULT_MIN_EFFECT):
    st.markdown(f"**{sentence}**")
st.caption(
    "The largest IOPS whose clat percentile meets the SLO, on the median curve over the "
    "runs, interpolated between the loads tested on log–log scales and never extrapolated "
    "(< first tested, ≥ last tested); 95 % percentile-bootstrap interval over whole runs "
    f"(5 runs or more hold it). Verdicts: family {report.family}; min effect "
    f"±{DEFAULT_MIN_EFFECT:.0%}."
)

rows = []
for s in report.results:
    for p in s.curve:
        rows.append(
            {
                "backend": s.group,
                "direction": s.direction,
                "job": p.job_name,
                "load": p.load,
                "iops": p.iops,
                "latency": p.latency(slo.percentile),
                "low": p.slo_ns_low,
                "high": p.slo_ns_high,
                "runs": p.runs,
                "knee": s.knee is not None and s.knee.load == p.load,
            }
        )  # fmt: skip
frame = pd.DataFrame(rows)
largest = pd.concat([frame["latency"], frame["high"]]).astype(float).fillna(0).max()
div, unit = display_scale("clat_p99_ns", max(float(largest), slo.limit_ns))
for col in ("latency", "low", "high"):
    frame[col] = frame[col] / div
x = alt.X("iops:Q", title="IOPS achieved (log scale)", scale=alt.Scale(type="log"))
y = alt.Y(
    "latency:Q",
    title=f"clat {slo.percentile} ({unit}, log scale)",
    scale=alt.Scale(type="log"),
)
colour = backend_colour()
base = alt.Chart(frame).encode(x=x, color=colour, detail="direction:N", order="load:Q")
band = base.mark_area(opacity=0.2).encode(
    y=alt.Y("low:Q", scale=alt.Scale(type="log")), y2="high:Q"
)
tips = [
    "backend",
    "direction",
    "job",
    alt.Tooltip("load:Q", format=",.0f"),
    alt.Tooltip("iops:Q", format=",.0f"),
    alt.Tooltip("latency:Q", format=".3g"),
    "runs",
]
line = base.mark_line(point=True).encode(
    y=y, strokeDash=alt.StrokeDash("direction:N", legend=alt.Legend(orient="top")), tooltip=tips
)
knees = (
    alt.Chart(frame[frame["knee"]])
    .mark_point(shape="diamond", size=160, filled=True)
    .encode(x=x, y=alt.Y("latency:Q", scale=alt.Scale(type="log")), color=colour, tooltip=tips)
)
rule = (
    alt.Chart(pd.DataFrame({"slo": [slo.limit_ns / div], "label": [slo.text()]}))
    .mark_rule(color="crimson", strokeDash=[6, 3])
    .encode(y=alt.Y("slo:Q", scale=alt.Scale(type="log")), tooltip=["label"])
)
show((band + line + knees + rule).properties(height=420))
st.caption(
    f"Each point is one load of {profile} (medians over the runs), the band the 95 % "
    f"bootstrap interval of the {slo.percentile}; the dashed red line is the SLO "
    f"({slo.text()}), ◆ the knee (Kneedle: where IOPS stop growing with the load offered)."
)

table = []
for s in report.results:
    r = row_for(report, s)
    table.append(
        {
            "backend": s.group,
            "direction": s.direction,
            "runs": s.runs,
            f"IOPS at {slo.text()} [95% CI]": iops_text(s),
            "knee": knee_text(s),
            "verdict": verdict(r, DEFAULT_MIN_EFFECT) if r else "baseline",
        }
    )
st.dataframe(pd.DataFrame(table), hide_index=True)
