"""A metric over time per backend, change points marked; the env-diff across a change."""

from __future__ import annotations

from dataclasses import replace

import altair as alt
import pandas as pd
import streamlit as st

from fiolake.aggregator.lake.columns import display_scale
from fiolake.aggregator.rows.envdiff import env_diff
from fiolake.aggregator.rows.latency import profiles_by_runs
from fiolake.aggregator.rows.series import cases_of, distinct
from fiolake.aggregator.stats.compare import metric_columns
from fiolake.aggregator.stats.trend import mark_accepted, recent_start, trend
from fiolake.app.charts import backend_colour, show, time_axis, when
from fiolake.app.common import call_or_stop, get_lake, run_or_stop
from fiolake.app.defaults import SPANS, TRENDS_SPAN, profile_filter, trends_metric_index

# A year of nightly runs is ~50,000 points a case and backend: the page opens on the
# recent ones, and draws daily means past MAX_MARKS (the browser slows down with them).
MAX_MARKS = 5_000

st.set_page_config(page_title="fiolake · Trends", layout="wide")
st.title("Trends")
lake = get_lake()

metrics = run_or_stop(metric_columns, lake)
profiles = run_or_stop(profiles_by_runs, lake)
top, bottom = st.columns(4), st.columns([3, 1, 1])
metric = top[0].selectbox(
    "Metric",
    metrics,
    index=trends_metric_index(metrics),
    key="metric",
    bind="query-params",
)
profile = top[1].selectbox("Profile", profiles, key="profile", bind="query-params")
cases = run_or_stop(cases_of, lake, profile) if profile else []
case = top[2].selectbox(
    "Job · direction",
    cases,
    format_func=lambda c: f"{c[0]} · {c[1]}",
    key="case",
    bind="query-params",
)
bucket = top[3].radio(
    "One point per", ["run", "day"], horizontal=True, key="per", bind="query-params"
)
backends_all = run_or_stop(distinct, lake, "backend", "status = 'ok'")
backends = bottom[0].multiselect(
    "Backends", backends_all, default=backends_all, key="backend", bind="query-params"
)
span = bottom[1].selectbox(
    "Last", list(SPANS), index=list(SPANS).index(TRENDS_SPAN), key="span", bind="query-params",
    help="Counted back from the newest run of the profile on these backends.",
)  # fmt: skip
if not backends or profile is None or case is None:
    st.info("Pick a profile, a job and at least one backend.")
    st.stop()

filt = profile_filter(backends, profile)
days = SPANS[span]
if days is not None:
    filt = replace(filt, since=run_or_stop(recent_start, lake, filt, days))
points = run_or_stop(trend, lake, metric, filt=filt, bucket=bucket, case=tuple(case))
# Acceptances are no commits: the cached answer is re-marked with the lake's records now.
points = call_or_stop(mark_accepted, lake, points)
divisor, unit = display_scale(metric, max((p.value or 0.0) for p in points))
frame = pd.DataFrame(
    {
        "at": pd.to_datetime([p.at for p in points], utc=True),
        "value": pd.Series(  # float even when every value is missing (NaN, not None)
            [None if p.value is None else p.value / divisor for p in points], dtype="float64"
        ),
        "backend": [p.backend for p in points],
        "runs": [p.n for p in points],
        "run": [p.run_id or "" for p in points],
        "change": [p.change_point for p in points],
        "accepted": [p.accepted for p in points],
    }
)
daily = len(frame) > MAX_MARKS
# Each point's time for its tooltip; drawn as daily means, only the change points need one.
frame["when"] = [when(p.at) if p.change_point or not daily else "" for p in points]
title = f"{metric} ({unit})" if unit else metric
tooltip = ["backend", "when", alt.Tooltip("value:Q", format=".4g"), "runs", "run", "accepted"]
if daily:  # each day's mean per backend, weighted by the runs behind each point
    valued = frame["value"].notna()
    drawn = (
        frame.assign(
            at=frame["at"].dt.floor("D"),
            weighted=(frame["value"] * frame["runs"]).where(valued, 0.0),
            counted=frame["runs"].where(valued, 0),
        )
        .groupby(["backend", "at"], as_index=False)
        .agg(weighted=("weighted", "sum"), counted=("counted", "sum"), runs=("runs", "sum"))
    )
    drawn = drawn.assign(
        value=drawn["weighted"] / drawn["counted"],
        when=drawn["at"].dt.strftime("%Y-%m-%d"),
        run="",
        accepted="",
    )
else:
    drawn = frame
base = alt.Chart(drawn).encode(x=time_axis("at"), y=alt.Y("value:Q", title=title))
# Dots for a readable number of points only: thousands of marks slow the browser down.
lines = base.mark_line(point=alt.OverlayMarkDef(size=18) if len(drawn) <= 400 else False).encode(
    color=backend_colour(), tooltip=tooltip
)
changes = frame[frame["change"]]
rules = (
    alt.Chart(changes)
    .mark_rule(strokeDash=[5, 3], strokeWidth=2)
    .encode(x="at:T", color=backend_colour(), tooltip=tooltip)
)
show(alt.layer(rules, lines).properties(height=420))
thinned = f", drawn as {len(drawn):,} daily means" if daily else ""
st.caption(
    f"{len(frame):,} points{thinned}; dashed lines: change points (E-Divisive means, as `fiolake "
    "regressions`), at the first point after the change; a change at an accepted campaign "
    "(`fiolake gate accept`) says so in its tooltip and is no regression. Times are run "
    "starts in UTC."
)

if changes.empty:
    st.info("No change point in these series.")
    st.stop()
st.subheader("What changed across a change point")
labels = {
    int(i): f"{b} · {w}" + (" · accepted" if a else "")
    for i, b, w, a in zip(
        changes.index, changes["backend"], changes["when"], changes["accepted"], strict=True
    )
}
picked = st.selectbox(
    "Change point", list(labels), format_func=labels.__getitem__, key="change", bind="query-params"
)
accepted_words = str(frame.at[picked, "accepted"])
if accepted_words:
    st.success(f"This change is {accepted_words} — not a regression.")
if bucket != "run":
    st.info("Pick one point per run to compare the runs on both sides of a change.")
    st.stop()
picked_backend = str(frame.at[picked, "backend"])
series = frame[frame["backend"] == picked_backend]
before = series[series["at"] < frame.at[picked, "at"]]
if before.empty:
    st.stop()
run_before, run_after = str(before.iloc[-1]["run"]), str(frame.at[picked, "run"])
level_before = series[series["at"] < frame.at[picked, "at"]]["value"].tail(10).mean()
level_after = series[series["at"] >= frame.at[picked, "at"]]["value"].head(10).mean()
st.markdown(
    f"**{picked_backend}**: {title} from about {level_before:.4g} to "
    f"{level_after:.4g} (means of up to 10 runs each side); last run before "
    f"`{run_before}`, first after `{run_after}`."
)
diffs = run_or_stop(env_diff, lake, run_before, run_after)
if not diffs:
    st.write("The recorded environments are the same.")
else:
    st.dataframe(
        pd.DataFrame(
            {"field": d.field, "before": str(d.a), "after": "" if d.b is None else str(d.b)}
            for d in diffs
        ),
        hide_index=True,
    )
