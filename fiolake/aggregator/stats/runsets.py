"""The runs a comparison reads, summarised in SQL: one pass over the selected runs per table.

`summarise` gives, per group × workload × profile × job × direction × metric, the
log-space moments, range, outliers (robust z via medians/MAD), steady/flagged counts and
the setups pooled (fio versions, origins, targets, file systems) that `compare` needs,
computed by DuckDB (`nightly` folds the runs of `regressions` night by night).
Both pool by `runs.workload_sha256` (`fiolake.workload`; the view computes it for runs
written before it existed). A question over every run of the lake is answered from the
case summaries compaction keeps (`pooled`), a few hundred rows instead of every run.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from fiolake.aggregator.lake import columns
from fiolake.aggregator.lake.lake import Lake, literals
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import fetch_rows
from fiolake.aggregator.stats import pooled, stats
from fiolake.aggregator.stats.groupstats import SIDES, Data, GroupStats, listed_outliers

WORKLOAD = "r.workload_sha256"
# The workloads a campaign ran, for finding earlier runs of them (the gate's baselines,
# the night history): `NEW_WORKLOADS` with the campaign (and any condition on `runs`)
# filled in, joined on `SAME_WORKLOAD`. Runs without a hash (imported history, lakes from
# before hashing) pool by profile, as a comparison pools them (a case is its profile and
# hash, '' for none): a join on the hash alone matched nothing for them, NULL equals nothing.
# One key per workload, so that the join is on equal values (a hash join: an OR in the
# condition made it a nested loop over every run, 0.25 s at a million runs).
_WORKLOAD_KEY = "coalesce({r}workload_sha256, 'profile:' || {r}profile)"
NEW_WORKLOADS = f"""SELECT DISTINCT backend, {_WORKLOAD_KEY.format(r="")} AS workload
                   FROM runs WHERE status = 'ok' AND {{where}}"""
SAME_WORKLOAD = f"r.backend = new.backend AND {_WORKLOAD_KEY.format(r='r.')} = new.workload"
BY_CAMPAIGN = 'CAST(r."campaign_id" AS VARCHAR)'  # the group of each run: its campaign
# Its backend and campaign: one summary answers the gate's per-backend questions at once.
BACKEND_SEP = "\x1f"
BY_BACKEND_CAMPAIGN = f"concat(r.backend, chr({ord(BACKEND_SEP)}), r.campaign_id)"
KEPT_SUMMARIES = 16  # per connection; the app keeps one open while its pages ask
# The app's sessions share one connection from several threads: its kept summaries are
# read and written under this lock (the queries themselves run outside it).
_KEPT_LOCK = threading.Lock()


def summarise(
    lake: Lake,
    group_expr: str,
    filt: RunFilter,
    metrics: list[str],
    *,
    allow_mixed: bool = False,
    exclude_unsteady: bool = False,
) -> Data:
    """(group, case) -> metric -> GroupStats, all computed in DuckDB (log-space moments,
    robust z via each case's median and MAD: `_summary_sql`). With `allow_mixed`,
    runs of different workloads pool.

    A question answered on this connection is not asked of DuckDB again (`Lake.summaries`),
    nor is one whose answer is part of an earlier one: fewer metrics, or, grouped by
    campaign, fewer of the same campaigns, or one backend of a summary grouped by backend
    and campaign (`BY_BACKEND_CAMPAIGN`): each group's figures are its own runs'. Grouped
    by backend and campaign, the campaigns kept are taken as they are and only the others
    asked (`_with_kept_campaigns`): the gate summarises the new campaign while it looks
    for the baseline, then the baseline alone."""
    sha = "NULL" if allow_mixed else WORKLOAD
    with _KEPT_LOCK:
        kept_now = list(lake.summaries.items())
    for (group, kept, kept_sha, kept_metrics, unsteady), data in kept_now:
        if (kept_sha, unsteady) != (sha, exclude_unsteady) or not set(metrics) <= set(kept_metrics):
            continue
        if group == group_expr and kept == filt:
            return _part(data, None, metrics)
        if group == group_expr == BY_CAMPAIGN and _fewer_campaigns(filt, kept):
            return _part(data, set(filt.campaigns), metrics)
        if (group, group_expr) == (BY_BACKEND_CAMPAIGN, BY_CAMPAIGN) and _one_backend(filt, kept):
            wanted = {f"{filt.backends[0]}{BACKEND_SEP}{c}" for c in filt.campaigns}
            return {
                (g.partition(BACKEND_SEP)[2], case): by_metric
                for (g, case), by_metric in _part(data, wanted, metrics).items()
            }
    if group_expr == BY_BACKEND_CAMPAIGN:
        found = _with_kept_campaigns(lake, filt, metrics, kept_now, allow_mixed=allow_mixed,
                                     exclude_unsteady=exclude_unsteady)  # fmt: skip
        if found is not None:
            return found
    pooled_data = pooled.summarise(
        lake, group_expr, filt, metrics, sha, exclude_unsteady=exclude_unsteady
    )
    if pooled_data is not None:
        data = pooled_data
    else:
        where = filt.where("r")
        sql = _summary_sql(group_expr, where, sha, metrics, exclude_unsteady=exclude_unsteady)
        data = _group_stats(fetch_rows(lake, sql), metrics)
    _keep(lake, (group_expr, filt, sha, tuple(metrics), exclude_unsteady), data)
    return data


def _with_kept_campaigns(
    lake: Lake,
    filt: RunFilter,
    metrics: list[str],
    kept_now: list[tuple[Any, Data]],
    *,
    allow_mixed: bool,
    exclude_unsteady: bool,
) -> Data | None:
    """A summary grouped by backend and campaign from the kept ones that hold some of
    `filt`'s campaigns on its backends (on every backend, where a kept filter names
    none), the other campaigns asked of DuckDB alone; None when no kept one holds any.
    The answer is kept."""
    if not filt.campaigns or filt.campaign is not None:
        return None
    sha = "NULL" if allow_mixed else WORKLOAD
    rest = replace(filt, campaigns=(), backends=())
    parts: list[Data] = []
    held: set[str] = set()
    for (group, kept, kept_sha, kept_metrics, unsteady), data in kept_now:
        if (
            group != BY_BACKEND_CAMPAIGN
            or (kept_sha, unsteady) != (sha, exclude_unsteady)
            or not set(metrics) <= set(kept_metrics)
            or kept.campaign is not None
            or replace(kept, campaigns=(), backends=()) != rest
            or not _on_its_backends(filt, kept)
        ):
            continue
        mine = (set(kept.campaigns) & set(filt.campaigns)) - held
        if mine:
            held |= mine
            parts.append(_campaigns_part(data, filt.backends, mine, metrics))
    if not parts:
        return None
    others = tuple(c for c in filt.campaigns if c not in held)
    if others:
        parts.append(
            summarise(lake, BY_BACKEND_CAMPAIGN, replace(filt, campaigns=others), metrics,
                      allow_mixed=allow_mixed, exclude_unsteady=exclude_unsteady)
        )  # fmt: skip
    data = {key: by_metric for part in parts for key, by_metric in part.items()}
    _keep(lake, (BY_BACKEND_CAMPAIGN, filt, sha, tuple(metrics), exclude_unsteady), data)
    return data


def _on_its_backends(asked: RunFilter, kept: RunFilter) -> bool:
    """Whether `kept` selected every backend `asked` does (all of them, naming none)."""
    if not kept.backends:
        return True
    return bool(asked.backends) and set(asked.backends) <= set(kept.backends)


def _campaigns_part(
    data: Data, backends: tuple[str, ...], campaigns: set[str], metrics: list[str]
) -> Data:
    """The groups of `campaigns` on `backends` (every backend for none) and the metrics
    asked for, out of a kept summary grouped by backend and campaign."""
    out: Data = {}
    for (group, case), by_metric in data.items():
        backend, _, campaign = group.partition(BACKEND_SEP)
        if campaign in campaigns and (not backends or backend in backends):
            out[(group, case)] = {m: by_metric[m] for m in metrics}
    return out


def _keep(lake: Lake, key: tuple[Any, ...], data: Data) -> None:
    """Keep a summary on the connection, the oldest dropped past KEPT_SUMMARIES."""
    with _KEPT_LOCK:
        lake.summaries[key] = data
        while len(lake.summaries) > KEPT_SUMMARIES:
            del lake.summaries[next(iter(lake.summaries))]


def _fewer_campaigns(asked: RunFilter, kept: RunFilter) -> bool:
    """Whether `asked` selects some of the campaigns `kept` did, and nothing else apart."""
    if not asked.campaigns or asked.campaign is not None or kept.campaign is not None:
        return False
    same = replace(asked, campaigns=()) == replace(kept, campaigns=())
    return same and set(asked.campaigns) <= set(kept.campaigns)


def _one_backend(asked: RunFilter, kept: RunFilter) -> bool:
    """Whether `asked` selects one of `kept`'s backends and some of its campaigns."""
    return (
        len(asked.backends) == 1
        and asked.backends[0] in kept.backends
        and _fewer_campaigns(replace(asked, backends=()), replace(kept, backends=()))
    )


def _part(data: Data, groups: set[str] | None, metrics: list[str]) -> Data:
    """The groups (all for None) and metrics asked for, out of a kept summary."""
    return {
        (group, case): {m: by_metric[m] for m in metrics}
        for (group, case), by_metric in data.items()
        if groups is None or group in groups
    }


def per_run_columns(metrics: list[str]) -> str:
    """SQL columns "m0", "m1", …: each metric of one run × job × direction, its threads
    folded by `columns.per_run_aggregate`."""
    return ", ".join(f'{columns.per_run_aggregate(m)} AS "m{i}"' for i, m in enumerate(metrics))


def _moment_columns(count: int) -> str:
    """SQL aggregates per case and metric i: runs "n", log-space mean and variance, range,
    runs with a value ≤ 0 ("bad": no logs), and the median of the logs."""
    return ", ".join(
        f'count("m{i}") AS "n{i}", avg("l{i}") AS "mean{i}", var_samp("l{i}") AS "var{i}", '
        f'min("m{i}") AS "lo{i}", max("m{i}") AS "hi{i}", '
        f'count(*) FILTER (WHERE "m{i}" <= 0) AS "bad{i}", median("l{i}") AS "med{i}"'
        for i in range(count)
    )


def _mad_columns(count: int) -> str:
    """SQL aggregates per case and metric i: the median of the logs again (so the outlier
    pass joins one table) and their MAD, median(|l − median|): the same numbers as
    DuckDB's `mad()` (the same median of the same differences) at about a third of its
    cost, since `mad()` finds the median again itself."""
    return ", ".join(
        f'any_value(g."med{i}") AS "med{i}", median(abs(j."l{i}" - g."med{i}")) AS "mad{i}"'
        for i in range(count)
    )


def _outlier(i: int) -> str:
    """SQL condition: metric i of run j is an outlier of its case (robust z on logs,
    0.6745 (l − median) / MAD, above OUTLIER_Z)."""
    return f'(d."mad{i}" > 0 AND abs(j."l{i}" - d."med{i}") > {stats.OUTLIER_CUT} * d."mad{i}")'


def _summary_sql(
    group_expr: str, where: str, sha: str, metrics: list[str], *, exclude_unsteady: bool
) -> str:
    """The one query of `summarise`; one row per group × case with 14 columns of keys and
    counts, then 8 per metric (n, mean, var, lo, hi, bad, outliers below and above).

    Cost grows with the rows (run × job × direction, 1.6 M for 100,000 runs of 8 jobs),
    so those rows carry as little as they can: the selected runs (rr) get two integers,
    `ck` for their group × profile × workload and `k` for every run attribute the table
    shows (fio version, origin, target, fs, flagged, preconditioned), so the per-row
    passes (j, the moments g, the MADs d, the outliers o) group and join on `ck`, job
    and direction and never carry the attributes' strings; a case's attribute lists come
    from its few distinct `k` (a). The median of each case (g) comes before its MAD (d),
    and only outlying rows reach the ordered list of run ids (o)."""
    idx = range(len(metrics))
    logs = ", ".join(
        f'p."m{i}", CASE WHEN p."m{i}" > 0 THEN ln(p."m{i}") END AS "l{i}"' for i in idx
    )
    # Each side of the median apart: a side with cases.TOP or more is not listed.
    odd = ", ".join(
        f'list(j.run_id ORDER BY j.run_id) FILTER (WHERE {_outlier(i)} AND j."l{i}" {op} '
        f'd."med{i}") AS "{side}{i}"'
        for i in idx
        for side, op in zip(SIDES, ("<", ">"), strict=True)
    )
    steady_only = "AND p.steady IS NOT FALSE" if exclude_unsteady else ""
    attrs = "grp, profile, sha, fio_version, origin, target, fs_type, flagged, pre"
    keys = "ck, job_name, direction"
    picked = ", ".join(
        f'g."n{i}", g."mean{i}", g."var{i}", g."lo{i}", g."hi{i}", g."bad{i}", o."below{i}", '
        f'o."above{i}"'
        for i in idx
    )
    # A case needs its profile, job and direction: rows without one never formed a case
    # (joins on NULL keys drop them), so they are left out first.
    return f"""
        WITH rr AS (
            SELECT r.run_id, coalesce({group_expr}, '') AS grp, r.profile,
                   coalesce({sha}, '') AS sha, r.fio_version,
                   coalesce(r.origin, 'run') AS origin, coalesce(r.target_kind, 'dir') AS target,
                   r.fs_type, coalesce(len(r.flags), 0) > 0 AS flagged,
                   r.preconditioned_by IS NOT NULL AS pre
            FROM runs r WHERE {where}
        ), rk AS MATERIALIZED (
            SELECT *, dense_rank() OVER (ORDER BY grp, profile, sha) AS ck,
                   dense_rank() OVER (ORDER BY {attrs}) AS k
            FROM rr WHERE profile IS NOT NULL
        ), per_run AS (
            SELECT x.run_id, x.job_name, x.direction, bool_and(x.steady_state) AS steady,
                   {per_run_columns(metrics)}
            FROM results x
            WHERE x.run_id IN (SELECT run_id FROM rr)
            GROUP BY ALL
        ), j AS MATERIALIZED (
            SELECT r.ck, r.k, p.job_name, p.direction, r.run_id, r.flagged, r.pre, p.steady,
                   {logs}
            FROM per_run p JOIN rk r USING (run_id)
            WHERE p.job_name IS NOT NULL AND p.direction IS NOT NULL {steady_only}
        ), g AS MATERIALIZED (
            SELECT {keys}, count(*) FILTER (WHERE steady) AS steady,
                   count(*) FILTER (WHERE NOT steady) AS unsteady,
                   count(*) FILTER (WHERE steady IS NULL) AS unknown,
                   count(*) FILTER (WHERE flagged) AS flagged,
                   count(*) FILTER (WHERE pre) AS pre, list(DISTINCT k) AS ks,
                   {_moment_columns(len(metrics))}
            FROM j GROUP BY ALL
        ), d AS MATERIALIZED (
            SELECT {keys}, {_mad_columns(len(metrics))}
            FROM j JOIN g USING ({keys}) GROUP BY ALL
        ), a AS (
            SELECT u.ck, u.job_name, u.direction, any_value(c.grp) AS grp,
                   any_value(c.profile) AS profile, any_value(c.sha) AS sha,
                   list(DISTINCT c.fio_version) AS fios, list(DISTINCT c.origin) AS origins,
                   list(DISTINCT c.target) AS targets, list(DISTINCT c.fs_type) AS fss
            FROM (SELECT {keys}, unnest(ks) AS k FROM g) u
            JOIN (SELECT DISTINCT k, {attrs} FROM rk) c USING (k)
            GROUP BY ALL
        ), o AS (
            SELECT {keys}, {odd}
            FROM j JOIN d USING ({keys})
            WHERE {" OR ".join(_outlier(i) for i in idx)}
            GROUP BY ALL
        )
        SELECT a.grp, a.profile, job_name, direction, a.sha, g.steady, g.unsteady, g.unknown,
               g.flagged, a.fios, g.pre, a.origins, a.targets, a.fss, {picked}
        FROM g JOIN a USING ({keys}) LEFT JOIN o USING ({keys})
    """


def _group_stats(rows: list[tuple[Any, ...]], metrics: list[str]) -> Data:
    """The rows of `_summary_sql` as (group, case) -> metric -> GroupStats: logs only
    when every value is positive, outliers only from OUTLIER_MIN_N runs up."""
    data: Data = {}
    for row in rows:
        group, profile, job, direction, sha_value, steady, unsteady, unknown, flagged, fios, pre = (
            row[:11]
        )
        origins, targets, fss = (sorted(v for v in values if v) for values in row[11:14])
        out: dict[str, GroupStats] = {}
        for i, metric in enumerate(metrics):
            n, mean, var, lo, hi, bad, below, above = row[14 + 8 * i : 22 + 8 * i]
            log = stats.LogSummary(n, mean, var) if n and not bad and mean is not None else None
            odd, unlisted = listed_outliers(below or [], above or [])
            if n < stats.OUTLIER_MIN_N:
                odd, unlisted = [], ()
            out[metric] = GroupStats(
                n, log, lo, hi, odd, steady, unsteady, unknown, flagged,
                sorted(v for v in fios if v), pre, origins, targets, fss, unlisted,
            )  # fmt: skip
        data[(str(group), (profile, job, direction, sha_value or None))] = out
    return data


def job_texts(lake: Lake, hashes: set[str]) -> dict[str, str]:
    """A canonical job text of each workload in `hashes` (what its runs ran)."""
    wanted = sorted(hashes)
    if not wanted:
        return {}
    cur = lake.cursor()
    try:
        found = cur.execute(
            "SELECT workload_sha256, any_value(canonical_job_file) FROM runs "
            f"WHERE workload_sha256 IN ({literals(wanted)}) GROUP BY 1"
        ).fetchall()
    finally:
        cur.close()
    return {h: t for h, t in found if t is not None}
