"""Compare backends: mean ± 95% CI per job and direction, Welch's t-test against a baseline."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fiolake.aggregator.columns import display_scale, format_value
from fiolake.aggregator.compare import compare, metric_columns
from fiolake.aggregator.filters import RunFilter
from fiolake.aggregator.series import distinct
from fiolake.app.common import get_lake, run_or_stop

st.set_page_config(page_title="fiolake · Compare", layout="wide")
st.title("Compare backends")
lake = get_lake()

campaigns = distinct(lake, "campaign_id", "status = 'ok'")
left, mid, right = st.columns(3)
campaign = left.selectbox("Campaign", ["(all)", *campaigns], index=1 if campaigns else 0)
scope = RunFilter(campaign=None if campaign == "(all)" else campaign)
where, params = scope.where("runs")
backends_all = distinct(lake, "backend", where, params)
backends = mid.multiselect("Backends", backends_all, default=backends_all)
profiles = distinct(lake, "profile", where, params)
profile = right.selectbox("Profile", ["(all)", *profiles])
metrics = metric_columns(lake)
metric = left.selectbox("Metric", metrics, index=metrics.index("iops") if "iops" in metrics else 0)
baseline = mid.selectbox("Baseline", backends or ["(none)"])

if not backends:
    st.info("Pick at least one backend.")
    st.stop()

filt = RunFilter(
    campaign=scope.campaign,
    backends=tuple(backends),
    profile=None if profile == "(all)" else profile,
)
result = run_or_stop(compare, lake, metrics=[metric], filt=filt, baseline=baseline)

marks = {"better": "▲ better", "worse": "▼ worse"}
table = pd.DataFrame(
    [
        {
            "backend": r.group,
            "profile": r.profile,
            "job": r.job_name,
            "dir": r.direction,
            "n": r.n,
            "mean": format_value(metric, r.mean),
            "± 95% CI": format_value(metric, r.ci_half),
            "Δ% vs " + result.baseline: "" if r.delta_pct is None else f"{r.delta_pct:+.1f}%",
            "verdict": marks.get(r.verdict, r.verdict),
        }
        for r in result.rows
    ]
)
st.dataframe(table, hide_index=True)

divisor, unit = display_scale(metric, max((r.mean or 0.0) for r in result.rows))
chart_data = pd.DataFrame(
    [
        {
            "backend": r.group,
            "case": f"{r.profile} · {r.job_name} · {r.direction}",
            "mean": (r.mean or 0.0) / divisor,
            "low": ((r.mean or 0.0) - (r.ci_half or 0.0)) / divisor,
            "high": ((r.mean or 0.0) + (r.ci_half or 0.0)) / divisor,
            "n": r.n,
        }
        for r in result.rows
    ]
)
title = f"{metric} ({unit})" if unit else metric
bars = (
    alt.Chart()
    .mark_bar()
    .encode(
        x=alt.X("backend:N", sort=result.groups, title=None),
        y=alt.Y("mean:Q", title=title),
        color=alt.Color("backend:N", sort=result.groups),
        tooltip=["backend", "case", "mean", "low", "high", "n"],
    )
)
errors = (
    alt.Chart()
    .mark_errorbar(ticks=True)
    .encode(x=alt.X("backend:N", sort=result.groups), y=alt.Y("low:Q", title=title), y2="high:Q")
)
chart = alt.layer(bars, errors, data=chart_data).facet(column=alt.Column("case:N", title=None))
st.altair_chart(chart)
st.caption(
    "Bars: mean of repetitions; whiskers: 95% confidence interval (Student t). "
    "Verdicts: Welch's t-test at α = 0.05; n < 2 on either side cannot be tested."
)
