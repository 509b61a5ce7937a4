"""The runners: host, backend, last seen, jobs done, the job they hold a lease on now."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fiolake.aggregator.rows.fleet import SILENT_AFTER_S, fleet
from fiolake.app.charts import when
from fiolake.app.common import call_or_stop, get_lake
from fiolake.fleet import IDLE_EVERY_S, RUNNING

st.set_page_config(page_title="fiolake · Fleet", layout="wide")
st.title("Fleet")
lake = get_lake()

members, problems = call_or_stop(fleet, lake)
for problem in problems:
    st.warning(problem)
if not members:
    st.info(
        "No runner has published a status here yet: runners write `fleet/<runner>.json` "
        "when they start (`fiolake runner`); local `fiolake run` does not."
    )
    st.stop()


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


table = pd.DataFrame(
    {
        "runner": m.status.runner,
        "host": m.status.host,
        "backend": m.status.backend,
        "state": m.status.state if m.alive else f"silent ({m.status.state})",
        "last seen (UTC)": when(m.last_seen),
        "age": _age(m.age_s),
        "ok": m.status.jobs.get("ok", 0),
        "failed": m.status.jobs.get("failed", 0),
        "rejected": m.status.jobs.get("rejected", 0),
        "current lease": m.status.job_id if m.status.state == RUNNING and m.alive else "",
        "up since": m.status.started_at,
    }
    for m in members
)
alive = sum(m.alive for m in members)
st.caption(
    f"{alive} of {len(members)} runner(s) alive. Runners publish at start, per job and every "
    f"{IDLE_EVERY_S / 60:.0f} min while idle; silent for over {SILENT_AFTER_S / 60:.0f} min "
    "(by the store's clock) counts as gone."
)
st.dataframe(table, hide_index=True)
