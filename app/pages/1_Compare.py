"""Compare backends: ratios of geometric means to a baseline, with 95% CIs and verdicts."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from fiolake.aggregator.columns import format_value
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

marks = {"better": "▲ better", "worse": "▼ worse", "equivalent": "= equivalent"}


def _ratio(r) -> str:  # noqa: ANN001
    if r.ratio is None:
        return "baseline" if r.verdict == "baseline" else ""
    ci = "" if r.ratio_ci_low is None else f" [{r.ratio_ci_low:.3g}×, {r.ratio_ci_high:.3g}×]"
    return f"{r.ratio:.3g}×{ci}"


table = pd.DataFrame(
    [
        {
            "backend": r.group,
            "profile": r.profile,
            "job": r.job_name,
            "dir": r.direction,
            "n": r.n,
            "geomean": format_value(metric, r.geomean),
            f"vs {result.baseline} [95% CI]": _ratio(r),
            "p (adjusted)": "" if r.p_adjusted is None else f"{r.p_adjusted:.2g}",
            "verdict": marks.get(r.verdict, r.verdict),
        }
        for r in result.rows
    ]
)
st.dataframe(table, hide_index=True)

chart_data = pd.DataFrame(
    [
        {
            "backend": r.group,
            "case": f"{r.profile} · {r.job_name} · {r.direction}",
            "ratio": r.ratio if r.ratio is not None else 1.0,
            "low": r.ratio_ci_low if r.ratio_ci_low is not None else r.ratio or 1.0,
            "high": r.ratio_ci_high if r.ratio_ci_high is not None else r.ratio or 1.0,
            "verdict": r.verdict,
            "p_adjusted": r.p_adjusted,
            "n": r.n,
        }
        for r in result.rows
    ]
)
title = f"{metric}: ratio to {result.baseline} (log scale)"
bars = (
    alt.Chart()
    .mark_point(filled=True, size=80)
    .encode(
        x=alt.X("backend:N", sort=result.groups, title=None),
        y=alt.Y("ratio:Q", title=title, scale=alt.Scale(type="log")),
        color=alt.Color("verdict:N"),
        tooltip=["backend", "case", "ratio", "low", "high", "p_adjusted", "verdict", "n"],
    )
)
errors = (
    alt.Chart()
    .mark_errorbar(ticks=True)
    .encode(
        x=alt.X("backend:N", sort=result.groups),
        y=alt.Y("low:Q", title=title, scale=alt.Scale(type="log")),
        y2="high:Q",
    )
)
chart = alt.layer(bars, errors, data=chart_data).facet(column=alt.Column("case:N", title=None))
st.altair_chart(chart)
st.caption(
    "Points: ratio of geometric means to the baseline; whiskers: 95% CI (Welch on log "
    "values, unadjusted; never below zero). Verdicts use p-values adjusted across the "
    "table (Holm) and a ±5 % minimum effect: see docs/statistics.md."
)
