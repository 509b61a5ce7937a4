"""fiolake: overview of the lake (runs per backend, the latest campaign)."""

from __future__ import annotations

import streamlit as st

from fiolake.aggregator.series import latest_campaign, overview
from fiolake.app.common import get_lake, human_frame

st.set_page_config(page_title="fiolake", layout="wide")
st.title("fiolake")
st.caption("fio results from every runner, side by side. Pages: Compare, Timeseries, Trends, SQL.")

lake = get_lake()
snap = lake.snapshot
cols = st.columns(3)
cols[0].metric("Committed runs", snap.commits.num_rows)
cols[1].metric("Backends", len({r[0] for r in overview(lake)}))
cols[2].metric("Compaction generation", lake.manifest.generation if lake.manifest else "none")

st.subheader("Runs per backend")
st.dataframe(
    human_frame(
        ["backend", "ok", "failed", "rejected", "profiles", "first run", "last run"], overview(lake)
    ),
    hide_index=True,
)

latest = latest_campaign(lake)
if latest is not None:
    campaign, rows = latest
    st.subheader(f"Latest campaign: {campaign}")
    st.dataframe(
        human_frame(["backend", "profile", "status", "runs", "last finished"], rows),
        hide_index=True,
    )
for warning in lake.warnings:
    st.warning(warning)
