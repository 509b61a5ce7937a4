"""Per-second bandwidth, IOPS or latency of chosen runs."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fiolake.aggregator.columns import display_scale
from fiolake.aggregator.series import SERIES_METRICS, per_second, recent_runs
from fiolake.app.common import get_lake, run_or_stop

st.set_page_config(page_title="fiolake · Timeseries", layout="wide")
st.title("Per-second timeseries")
lake = get_lake()

runs = recent_runs(lake)
labels = {r[0]: f"{r[0]} · {r[1]} · {r[2]} · {r[4]:%Y-%m-%d %H:%M}" for r in runs}
chosen = st.multiselect(
    "Runs", list(labels), default=list(labels)[:2], format_func=lambda rid: labels[rid]
)
metric = st.selectbox("Series", SERIES_METRICS)
if not chosen:
    st.info("Pick one or more runs.")
    st.stop()

points = run_or_stop(per_second, lake, chosen, metric)
if not points:
    st.info("These runs have no per-second data.")
    st.stop()
divisor, unit = display_scale(metric, max((p.value or 0.0) for p in points))
frame = pd.DataFrame(
    [
        {
            "second": p.second,
            "value": None if p.value is None else p.value / divisor,
            "series": f"{p.run_id} · {p.backend} · {p.job_name} · {p.direction}",
        }
        for p in points
    ]
)
title = f"{metric} ({unit})" if unit else metric
chart = (
    alt.Chart(frame)
    .mark_line(point=True)
    .encode(
        x=alt.X("second:Q", title="second"),
        y=alt.Y("value:Q", title=title),
        color=alt.Color("series:N", legend=alt.Legend(orient="bottom", columns=1)),
        tooltip=["series", "second", "value"],
    )
)
st.altair_chart(chart)
