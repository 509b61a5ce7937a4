"""Series of comparable runs folded night by night in SQL (what `regressions` reads).

A regression series (group × profile × job × direction × workload × metric) is judged
on its nights (campaigns), not its runs (`night_changes`): so DuckDB folds the runs of
each night into their count, mean log and sum of squared log deviations (M2), and names
the night's first and last run. Python then holds each series' nights as arrays (numpy,
Arrow), and builds a `Night` only for those it reports; the per-run path built an
object per run × metric, ~24 M at 1,000,000 runs: 122 s and 5.9 GB for `regressions
--since all` (issue 44).

Segments of nights pool exactly (Chan et al.'s update of mean and M2), so the Welch test
of a change (`stats.compare_summaries`) gets the numbers it got from the runs' values,
to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fiolake.aggregator.lake import summaries
from fiolake.aggregator.lake.idarrays import ids_array, numbers, positions_array
from fiolake.aggregator.lake.lake import Lake
from fiolake.aggregator.lake.summaries import NO_START
from fiolake.aggregator.rows import night_rows
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import fetch_arrow
from fiolake.aggregator.stats import stats
from fiolake.aggregator.stats.groupstats import Case
from fiolake.aggregator.stats.runsets import per_run_columns

BY_BACKEND = "r.backend"  # the grouping `regressions` asks for: the summaries' backend


@dataclass(frozen=True)
class Night:
    """One night (campaign) of one series: its runs with a positive value, as logs."""

    label: str  # the campaign ("" for runs without one)
    n: int
    mean: float  # of ln(value)
    m2: float  # sum of squared deviations of ln(value) from `mean`
    first_run: str  # its first run in time order (started_at, then run_id)
    first_at: datetime | None
    last_run: str


@dataclass(frozen=True)
class NightSeries:
    """One series' nights in order of their first run, as arrays."""

    n: np.ndarray  # runs per night
    mean: np.ndarray  # mean log per night
    m2: np.ndarray  # sum of squared log deviations per night
    labels: pa.Array
    first_run: pa.Array
    first_ms: pa.Array  # epoch ms of the first run's start (null where unknown)
    last_run: pa.Array

    def __len__(self) -> int:
        return len(self.n)

    def night(self, k: int) -> Night:
        """Night `k` as an object (the reported ones only)."""
        ms = self.first_ms[k].as_py()
        at = datetime.fromtimestamp(ms / 1000, UTC) if ms is not None else None
        return Night(self.labels[k].as_py(), int(self.n[k]), float(self.mean[k]),
                     float(self.m2[k]), self.first_run[k].as_py(), at,
                     self.last_run[k].as_py())  # fmt: skip

    def pooled(self, lo: int, hi: int) -> stats.LogSummary:
        """The log summary of every run of nights [lo, hi) together."""
        return pooled(self.n[lo:hi], self.mean[lo:hi], self.m2[lo:hi])


def pooled(n: np.ndarray, mean: np.ndarray, m2: np.ndarray) -> stats.LogSummary:
    """The log summary of the runs of nights with these counts, mean logs and M2s
    together (Chan et al.'s update: exact, unlike a difference of raw sums of squares)."""
    count = int(n.sum())
    mu = float((n * mean).sum() / count)
    total = float((m2 + n * (mean - mu) ** 2).sum())
    return stats.LogSummary(count, mu, total / (count - 1) if count > 1 else None)


def _no_nights() -> NightSeries:
    strings, none = ids_array([]), np.zeros(0)
    return NightSeries(none.astype(np.int64), none, none, strings, strings,
                       positions_array(none), strings)  # fmt: skip


def _sql(group_expr: str, where: str, metrics: list[str]) -> str:
    """One row per series × night: the series' number (`sid`), its keys, and per metric
    i the night's count, mean log, M2, first run, its start (epoch ms) and last run."""
    order = "ORDER BY j.started_at, j.run_id"
    folded = ", ".join(
        f'count(j."l{i}") AS "n{i}", avg(j."l{i}") AS "mean{i}", '
        f'coalesce(var_pop(j."l{i}") * count(j."l{i}"), 0) AS "m2{i}", '
        f'first(j.run_id {order}) FILTER (WHERE j."l{i}" IS NOT NULL) AS "first{i}", '
        f'epoch_ms(first(j.started_at {order}) FILTER (WHERE j."l{i}" IS NOT NULL)) AS "at{i}", '
        # the order of nights: runs without a start sort last, as in `order`
        f'coalesce("at{i}", {np.iinfo(np.int64).max}) AS "start{i}", '
        f'last(j.run_id {order}) FILTER (WHERE j."l{i}" IS NOT NULL) AS "last{i}"'
        for i in range(len(metrics))
    )
    logs = ", ".join(
        f'CASE WHEN p."m{i}" > 0 THEN ln(p."m{i}") END AS "l{i}"' for i in range(len(metrics))
    )
    keys = "grp, profile, job_name, direction, sha"
    return f"""
        WITH rr AS (
            SELECT r.run_id, CAST({group_expr} AS VARCHAR) AS grp, r.profile,
                   r.workload_sha256 AS sha, coalesce(r.campaign_id, '') AS night,
                   r.started_at
            FROM runs r WHERE {where}
        ), per_run AS (
            SELECT x.run_id, x.job_name, x.direction, {per_run_columns(metrics)}
            FROM results x
            WHERE x.run_id IN (SELECT run_id FROM rr)
            GROUP BY ALL
        ), j AS (
            SELECT r.grp, r.profile, p.job_name, p.direction, r.sha, r.night, r.run_id,
                   r.started_at, {logs}
            FROM per_run p JOIN rr r USING (run_id)
        ), folded AS (
            SELECT {keys}, night, {folded} FROM j GROUP BY {keys}, night
        )
        SELECT dense_rank() OVER (ORDER BY {keys}) AS sid, * FROM folded
    """


def _merged_sql(partial: str, metrics: list[str]) -> str:
    """`_sql`'s rows from partial summaries of nights (`night_rows.partial_rows`): the
    rows of one series × night merged exactly — counts and sums added, mean and M2 by
    Chan et al.'s update, the first and last run the smallest and largest (start, run).
    Almost every night is one row already (its runs compacted together, alike): those
    pass through; merging every row cost 1.6 s at 1,000,000 runs, where the few nights
    of several rows cost nothing."""
    keys = "grp, profile, job_name, direction, sha, night"
    row, mu, merged, picked = [], [], [], []
    for i, metric in enumerate(metrics):
        c = summaries.metric_columns(metric)
        row.append(
            f'p."{c["count"]}" - p."{c["nonpositive"]}" AS "n{i}", '
            f'p."{c["log_mean"]}" AS "mean{i}", p."{c["log_m2"]}" AS "m2{i}", '
            f'p."{c["first_run"]}" AS "first{i}", p."{c["first_us"]}" AS "fus{i}", '
            f'p."{c["last_run"]}" AS "last{i}", p."{c["last_us"]}" AS "lus{i}"'
        )
        pooled, spread = summaries.chan_merge(f'"n{i}"', f'"mean{i}"', f'"m2{i}"', f'"mu{i}"')
        mu.append(f'{pooled} AS "mu{i}"')
        has = f'FILTER (WHERE "n{i}" > 0)'
        first, last = (
            f'struct_pack(a := coalesce("{us}{i}", {NO_START}), r := "{run}{i}")'
            for us, run in (("fus", "first"), ("lus", "last"))
        )
        merged.append(
            f'CAST(sum("n{i}") AS BIGINT) AS "n{i}", any_value("mu{i}") AS "mean{i}", '
            f'{spread} AS "m2{i}", '
            f'min({first}) {has} AS "f{i}", max({last}) {has} AS "l{i}"'
        )
        picked.append(
            f'"n{i}", "mean{i}", "m2{i}", "first{i}", "fus{i}" // 1000 AS "at{i}", '
            f'coalesce("at{i}", {np.iinfo(np.int64).max}) AS "start{i}", "last{i}"'
        )
    split = ", ".join(
        f'"n{i}", "mean{i}", "m2{i}", "f{i}".r AS "first{i}", '
        f'nullif("f{i}".a, {NO_START}) AS "fus{i}", "l{i}".r AS "last{i}"'
        for i in range(len(metrics))
    )
    alone = ", ".join(
        f'"n{i}", "mean{i}", "m2{i}", "first{i}", "fus{i}", "last{i}"' for i in range(len(metrics))
    )
    return f"""
        WITH p AS (
            SELECT CAST(backend AS VARCHAR) AS grp, profile, job_name, direction,
                   workload_sha256 AS sha, coalesce(campaign_id, '') AS night, *
            FROM ({partial})
        ), q AS (
            SELECT {keys}, count(*) OVER (PARTITION BY {keys}) AS parts, {", ".join(row)}
            FROM p
        ), w AS (
            SELECT *, {", ".join(mu)} FROM q WHERE parts > 1 WINDOW k AS (PARTITION BY {keys})
        ), many AS (
            SELECT {keys}, {", ".join(merged)} FROM w GROUP BY {keys}
        ), folded AS (
            SELECT {keys}, {alone} FROM q WHERE parts = 1
            UNION ALL
            SELECT {keys}, {split} FROM many
        )
        SELECT dense_rank() OVER (ORDER BY grp, profile, job_name, direction, sha) AS sid,
               {keys}, {", ".join(picked)}
        FROM folded
    """


def nightly(
    lake: Lake, group_expr: str, filt: RunFilter, metrics: list[str]
) -> dict[tuple[str, Case], dict[str, NightSeries]]:
    """(group, case) -> metric -> its nights in order of their first run (none for a
    metric no run has a positive value of). One query; its rows are series × nights.
    Grouped by backend, compacted nights come from their summaries (`night_rows`); a
    summaries file gone behind its record folds every run instead."""
    table = None
    if group_expr == BY_BACKEND:
        try:
            partial = night_rows.partial_rows(lake, filt, metrics)
            if partial is not None:
                table = fetch_arrow(lake, _merged_sql(partial, metrics))
        except duckdb.IOException:  # a summaries file gone behind its record: fold the runs
            table = None
    if table is None:
        table = fetch_arrow(lake, _sql(group_expr, filt.where("r"), metrics))
    sids, first = np.unique(numbers(table["sid"]), return_index=True)
    heads = table.take(positions_array(first)).select(
        ["grp", "profile", "job_name", "direction", "sha"]
    )
    by_sid: dict[int, dict[str, NightSeries]] = {}
    out: dict[tuple[str, Case], dict[str, NightSeries]] = {}
    for sid, (group, profile, job, direction, sha) in zip(
        sids.tolist(), zip(*heads.to_pydict().values(), strict=True), strict=True
    ):
        by_sid[sid] = out[(str(group), (profile, job, direction, sha))] = dict.fromkeys(
            metrics, _no_nights()
        )
    for i, metric in enumerate(metrics):
        # not pc.greater(…, 0), to_numpy() nor pa.array(): each imports pandas (0.2 s)
        # This metric's columns only: every take copies what it is given (a year: 0.7 s).
        mine = table.select(
            [
                "sid",
                "night",
                *(f"{c}{i}" for c in ("n", "mean", "m2", "first", "at", "start", "last")),
            ]
        )
        nights = mine.take(positions_array(np.flatnonzero(numbers(table[f"n{i}"]) > 0)))
        # Nights in order of their first run: started_at (missing last), then run_id.
        order = pc.sort_indices(
            nights, [("sid", "ascending"), (f"start{i}", "ascending"), (f"first{i}", "ascending")]
        )
        nights = nights.take(order)
        sid = numbers(nights["sid"])
        n, mean, m2 = (numbers(nights[f"{c}{i}"]) for c in ("n", "mean", "m2"))
        first_run, first_ms, last_run, labels = (
            nights[c].combine_chunks() for c in (f"first{i}", f"at{i}", f"last{i}", "night")
        )
        cuts = [0, *(np.flatnonzero(np.diff(sid)) + 1).tolist(), len(sid)]
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            if hi > lo:
                by_sid[int(sid[lo])][metric] = NightSeries(
                    n[lo:hi], mean[lo:hi], m2[lo:hi], labels[lo:hi], first_run[lo:hi],
                    first_ms[lo:hi], last_run[lo:hi],
                )  # fmt: skip
    return out
