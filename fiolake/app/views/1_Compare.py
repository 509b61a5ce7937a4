"""Compare backends — or the file systems `fiolake run --mkfs` made on one device (group
by fs_type): ratios of geometric means to a baseline, with 95% CIs and verdicts."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from fiolake.aggregator.lake.columns import format_value
from fiolake.aggregator.report.headline import landing_scope
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import distinct
from fiolake.aggregator.stats.compare import compare, metric_columns
from fiolake.aggregator.stats.verdict_text import label
from fiolake.app.charts import ratio_chart, ratio_frame, show
from fiolake.app.common import get_lake, run_or_stop

st.set_page_config(page_title="fiolake · Compare", layout="wide")
st.title("Compare backends")
lake = get_lake()
# What a row's group is: the backend, or the file system (`run --mkfs`: xfs vs ext4 vs btrfs
# on one device, docs/usage.md).
GROUP_BY = {"backend": "Backends", "fs_type": "File systems"}

campaigns = run_or_stop(distinct, lake, "campaign_id", "status = 'ok'")
# Open where the landing page's answer comes from: the newest campaign with two backends.
newest = run_or_stop(landing_scope, lake).campaign
left, mid, right = st.columns(3)
campaign = left.selectbox(
    "Campaign",
    ["(all)", *campaigns],
    index=campaigns.index(newest) + 1 if newest in campaigns else 0,
    key="campaign",
    bind="query-params",
)
scope = RunFilter(campaign=None if campaign == "(all)" else campaign)
where = scope.where("runs")
by = right.selectbox(
    "Group by", list(GROUP_BY), format_func=GROUP_BY.__getitem__, key="by", bind="query-params"
)
groups_all = [g for g in run_or_stop(distinct, lake, by, where) if g is not None]
backends = mid.multiselect(
    GROUP_BY[by], groups_all, default=groups_all, key=by, bind="query-params"
)
profiles = run_or_stop(distinct, lake, "profile", where)
profile = right.selectbox("Profile", ["(all)", *profiles], key="profile", bind="query-params")
metrics = run_or_stop(metric_columns, lake)
metric = left.selectbox(
    "Metric",
    metrics,
    index=metrics.index("iops") if "iops" in metrics else 0,
    key="metric",
    bind="query-params",
)
baseline = mid.selectbox("Baseline", backends or ["(none)"], key="baseline", bind="query-params")

if not backends:
    st.info(f"Pick at least one of the {GROUP_BY[by].lower()}.")
    st.stop()

filt = RunFilter(
    campaign=scope.campaign,
    backends=tuple(backends) if by == "backend" else (),
    profile=None if profile == "(all)" else profile,
)
result = run_or_stop(compare, lake, by=by, metrics=[metric], filt=filt, baseline=baseline)
# compare hides the backends not picked itself; other groups are hidden here.
result = replace(result, rows=[r for r in result.rows if r.group in backends])
rows = result.rows


def _ratio(r) -> str:  # noqa: ANN001
    if r.ratio is None:
        return "baseline" if r.verdict == "baseline" else ""
    ci = "" if r.ratio_ci_low is None else f" [{r.ratio_ci_low:.3g}×, {r.ratio_ci_high:.3g}×]"
    return f"{r.ratio:.3g}×{ci}"


table = pd.DataFrame(
    [
        {
            by: r.group,
            "profile": r.profile,
            "job": r.job_name,
            "dir": r.direction,
            "n": r.n,
            "geomean": format_value(metric, r.geomean),
            f"vs {result.baseline} [95% CI]": _ratio(r),
            "p (adjusted)": "" if r.p_adjusted is None else f"{r.p_adjusted:.2g}",
            "verdict": label(r, result.min_effect),
            # what else differs among the pooled runs, or why a job was not pooled
            "note": "; ".join(r.notes),
        }
        for r in rows
    ]
)
st.dataframe(table, hide_index=True)

frame = ratio_frame(result)
if not frame.empty:
    show(ratio_chart(frame, result.baseline, metric))
st.caption(
    "Bars: ratio of geometric means to the baseline (log axis); whiskers: 95% CI (Welch on log "
    "values, unadjusted; never below zero). Verdicts use p-values adjusted across the "
    f"question's family — {result.family} — whatever the backend, profile or metric "
    "selection hides, and a ±5 % minimum effect: see docs/statistics.md."
)
