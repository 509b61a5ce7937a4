"""The regression gate: a campaign against its baseline campaign, worst first — the same
rows and verdicts as `fiolake gate` (aggregator.stats.gate, through compare.compare)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fiolake.aggregator.lake.columns import p_text, ratio_text
from fiolake.aggregator.report.gate_report import html_report
from fiolake.aggregator.report.report_data import report_data
from fiolake.aggregator.rows.series import distinct
from fiolake.aggregator.stats.gate import gate
from fiolake.aggregator.stats.verdict_text import host_busy_words, label
from fiolake.app.common import get_lake, run_or_stop

st.set_page_config(page_title="fiolake · Gate", layout="wide")
st.title("Regression gate")
lake = get_lake()

campaigns = list(
    reversed(run_or_stop(distinct, lake, "campaign_id", "status = 'ok'"))
)  # newest first
if len(campaigns) < 2:
    st.info("The gate needs two campaigns of the same jobs: a new one and a baseline.")
    st.stop()
left, right = st.columns(2)
campaign = left.selectbox("Campaign", campaigns, key="campaign", bind="query-params")
choices = ["(newest earlier with its jobs)", *[c for c in campaigns if c != campaign]]
picked = right.selectbox("Baseline campaign", choices, key="baseline", bind="query-params")
baseline = None if picked == choices[0] else picked

result = run_or_stop(gate, lake, campaign, baseline)
worse, unsure = len(result.worse), len(result.inconclusive)
verdict = "fails" if worse else "passes"
st.markdown(
    f"Campaign **{result.campaign}** against **{result.baseline}**: the gate **{verdict}** "
    f"— {worse} worse, {unsure} inconclusive"
    f"{host_busy_words([g.reason for g in result.rows])} of {len(result.rows)} rows "
    f"(`fiolake gate --campaign {result.campaign} --baseline-campaign {result.baseline}`)."
)
table = pd.DataFrame(
    [
        {
            "backend": g.backend,
            "profile": g.row.profile,
            "job": g.row.job_name,
            "dir": g.row.direction,
            "metric": g.row.metric,
            f"vs {result.baseline} [95% CI]": ratio_text(
                g.row.metric, g.row.ratio, g.row.ratio_ci_low, g.row.ratio_ci_high
            ),
            "p (adjusted)": p_text(g.row.p_adjusted),
            "verdict": label(g.row, g.min_effect, g.reason),
        }
        for g in result.rows
    ]
)
st.dataframe(table, hide_index=True)
# The report's charts read every row's curves and series: 5 s of the page on the
# 1,000,000-run lake when it was built on every visit. It is built when asked for.
if st.button(
    "Prepare the HTML report",
    help="One self-contained file (as `fiolake report`) to attach to a ticket.",
):
    st.download_button(
        "Download the HTML report",
        # The page's own address is unknown here: no links.
        html_report(result, None, run_or_stop(report_data, lake, result)),
        file_name=f"fiolake-gate-{result.campaign}-vs-{result.baseline}.html",
        mime="text/html",
        on_click="ignore",  # a rerun would take the button away before the next click
    )
st.caption(
    "Worst first. Verdicts as `fiolake compare` and `fiolake gate`: ratios of geometric "
    "means, 95 % CIs, p-values adjusted per backend (family: "
    + "; ".join(result.families)
    + f"), ±{result.min_effect * 100:g} % minimum effect. Nights: {result.nights_words()}. "
    "docs/ci.md."
)
