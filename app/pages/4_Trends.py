"""A metric over time per backend, profile, job and direction."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fiolake.aggregator.columns import display_scale
from fiolake.aggregator.compare import metric_columns
from fiolake.aggregator.filters import RunFilter
from fiolake.aggregator.series import distinct
from fiolake.aggregator.trend import trend
from fiolake.app.common import get_lake, run_or_stop

st.set_page_config(page_title="fiolake · Trends", layout="wide")
st.title("Trends")
lake = get_lake()

metrics = metric_columns(lake)
left, mid, right = st.columns(3)
metric = left.selectbox("Metric", metrics, index=metrics.index("iops") if "iops" in metrics else 0)
bucket = mid.radio("One point per", ["run", "day"], horizontal=True)
backends_all = distinct(lake, "backend", "status = 'ok'")
backends = right.multiselect("Backends", backends_all, default=backends_all)
profiles = distinct(lake, "profile", "status = 'ok'")
profile = left.selectbox("Profile", ["(all)", *profiles])
if not backends:
    st.info("Pick at least one backend.")
    st.stop()

filt = RunFilter(backends=tuple(backends), profile=None if profile == "(all)" else profile)
points = run_or_stop(trend, lake, metric, filt=filt, bucket=bucket)
divisor, unit = display_scale(metric, max((p.value or 0.0) for p in points))
frame = pd.DataFrame(
    [
        {
            "at": p.at,
            "value": None if p.value is None else p.value / divisor,
            "backend": p.backend,
            "case": f"{p.profile} · {p.job_name} · {p.direction}",
            "runs": p.n,
        }
        for p in points
    ]
)
title = f"{metric} ({unit})" if unit else metric
chart = (
    alt.Chart(frame)
    .mark_line(point=True)
    .encode(
        x=alt.X("at:T", title="started (UTC)"),
        y=alt.Y("value:Q", title=title),
        color="backend:N",
        tooltip=["backend", "case", "at", "value", "runs"],
    )
    .facet(row=alt.Row("case:N", title=None))
)
st.altair_chart(chart)
