"""Read-only SQL over the lake views, with a row cap and a time limit."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fiolake.aggregator.lake.query import run_query
from fiolake.app.common import call_or_stop, get_lake, human_frame
from fiolake.app.login import log_query, require_analyst

st.set_page_config(page_title="fiolake · SQL", layout="wide")
st.title("SQL")
st.caption(
    "Views: runs, results, timeseries, percentiles (committed runs only) and commits. "
    "Read-only: SELECT, WITH, DESCRIBE, SHOW, EXPLAIN."
)
require_analyst("SQL")
lake = get_lake()

query = st.text_area(
    "Query",
    "SELECT backend, job_name, direction, avg(iops) AS iops, avg(bw_bytes) AS bw_bytes\n"
    "FROM results GROUP BY ALL ORDER BY ALL",
    height=150,
    key="q",
    bind="query-params",
)
left, right = st.columns(2)
row_cap = left.number_input("Row cap", min_value=1, max_value=100_000, value=1000, step=100)
timeout_s = right.number_input("Time limit (s)", min_value=1, max_value=300, value=30)
human = st.checkbox("Human units for known columns", value=True)

if st.button("Run", type="primary"):
    log_query(query)
    result = call_or_stop(run_query, lake, query, row_limit=int(row_cap), timeout_s=timeout_s)
    if result.truncated:
        st.warning(f"Result truncated: showing the first {int(row_cap)} rows (raise the row cap).")
    raw = pd.DataFrame(result.rows, columns=result.columns)
    st.dataframe(human_frame(result.columns, result.rows) if human else raw, hide_index=True)
    st.download_button(
        "Download CSV (raw units)",
        raw.to_csv(index=False).encode(),
        file_name="fiolake-query.csv",
        mime="text/csv",
        on_click="ignore",  # keep the result on screen (no rerun)
    )
    st.caption(f"{len(result.rows)} row(s)")
