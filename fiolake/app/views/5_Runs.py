"""Every committed run: status, the reason for failed or refused ones, the environment."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.runlist import STATUSES, list_runs
from fiolake.aggregator.rows.series import distinct
from fiolake.app.charts import when
from fiolake.app.common import get_lake, human_frame, run_or_stop

st.set_page_config(page_title="fiolake · Runs", layout="wide")
st.title("Runs")
lake = get_lake()

cols = st.columns(4)
statuses = cols[0].multiselect("Status", STATUSES, key="status", bind="query-params")
backends = cols[1].multiselect(
    "Backends", run_or_stop(distinct, lake, "backend"), key="backend", bind="query-params"
)
profiles = ["(all)", *run_or_stop(distinct, lake, "profile")]
profile = cols[2].selectbox("Profile", profiles, key="profile", bind="query-params")
campaigns = ["(all)", *reversed(run_or_stop(distinct, lake, "campaign_id"))]
campaign = cols[3].selectbox("Campaign", campaigns, key="campaign", bind="query-params")

filt = RunFilter(
    campaign=None if campaign == "(all)" else campaign,
    backends=tuple(backends),
    profile=None if profile == "(all)" else profile,
)
columns, rows, total = run_or_stop(list_runs, lake, filt, tuple(statuses))
shown = [
    tuple(
        when(v) if c == "started_at" else ", ".join(v) if c == "flags" and v else v
        for c, v in zip(columns, row, strict=True)
    )
    for row in rows
]
table = human_frame(columns, shown).rename(columns={"started_at": "started (UTC)"})
counts = pd.Series([r[columns.index("status")] for r in rows]).value_counts()
st.caption(
    f"{total:,} run(s) match"
    + (f"; the newest {len(rows):,} shown" if total > len(rows) else "")
    + ("; " + ", ".join(f"{n} {s}" for s, n in counts.items()) if len(counts) else "")
    + ". `error` says why a run failed or was refused; flags mark runs that were not alone; "
    "`role` is precondition for a run that only prepared the files of the measured run "
    "naming it in `preconditioned_by` (never compared)."
)
st.dataframe(table, hide_index=True, height=min(700, 38 + 35 * max(1, len(table))))
