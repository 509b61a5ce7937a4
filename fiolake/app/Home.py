"""fiolake: the answer first — which backend, by how much — then the lake at a glance."""

from __future__ import annotations

import streamlit as st

from fiolake.aggregator.report.headline import landing, profile_ratios, sentences
from fiolake.aggregator.rows.series import overview
from fiolake.app.charts import profile_ratio_frame, ratio_chart, show, when
from fiolake.app.common import get_lake, human_frame, run_or_stop
from fiolake.app.serve import warm_pages_after

st.set_page_config(page_title="fiolake", layout="wide")
st.title("fiolake")
lake = get_lake()

scope, result = run_or_stop(landing, lake)
where = f"campaign **{scope.campaign}**" if scope.campaign else "**all campaigns**"
st.markdown(
    f"Newest comparison: {where} — {', '.join(scope.backends)}; baseline "
    f"**{result.baseline}**, geometric means of the repetitions, 95 % CIs."
)
for profile, lines in sentences(result).items():
    st.markdown(f"**{profile}** — " + " · ".join(lines))

frame = profile_ratio_frame(profile_ratios(result))
if frame.empty:
    st.info("Only the baseline has runs here: nothing to set against it.")
else:
    tabs = st.tabs(["IOPS", "p99 latency"])
    for tab, metric in zip(tabs, result.metrics, strict=True):
        with tab:
            if (frame["metric"] == metric).any():
                show(ratio_chart(frame, result.baseline, metric))
    st.caption(
        "Bars: ratio of geometric means to the baseline (log axis, 1 = same); whiskers: "
        "95 % CI — for a profile of several jobs, the bar is the geometric mean of their "
        "ratios and the whisker their range; colour: verdict (Holm-adjusted p across "
        f"{result.tests} tests, ±5 % minimum effect; hover for p). "
        "More on the Compare page; method: docs/statistics.md."
    )

with st.expander("The lake: runs per backend"):
    snap = lake.snapshot
    cols = st.columns(3)
    cols[0].metric("Committed runs", snap.commits.num_rows)
    rows = run_or_stop(overview, lake)
    cols[1].metric("Backends", len(rows))
    cols[2].metric("Compaction generation", lake.compacted.generation if lake.compacted else "none")
    table = [(*r[:5], when(r[5]), when(r[6])) for r in rows]
    columns = ["backend", "ok", "failed", "rejected", "profiles", "first run", "last run"]
    st.dataframe(human_frame(columns, table), hide_index=True)
for warning in lake.warnings:
    st.warning(warning)
# Drawn: the server may now answer what the other pages ask first (once per server).
warm_pages_after()
