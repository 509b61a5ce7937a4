"""Night summaries: each night's runs of each case folded once, at compaction.

A question over a year of runs (`regressions --since all`) used to fold every run × job ×
direction again, 16 M result rows at 1,000,000 runs (issue 44). Compaction now writes,
for the runs it appends, one row per night (campaign) × case × run attributes to the
Delta table `night_summaries`: per headline metric (`columns.HEADLINE_METRICS`) the runs
with a value, those with a value ≤ 0, the mean of the positive values' logs and their
sum of squared deviations (M2), the range, and the night's first and last run with such
a value. Rows of one night and case written by different compactions (a run committed
late) are partial summaries of the same night; readers merge them exactly (counts, sums;
mean and M2 by Chan et al.'s update), so a reader never depends on how runs were split
among compactions.

The rows are derived: the same SQL (`partial_sql`) folds the runs a reader has no
summary for (runs not yet compacted) from the lake's views, and readers merge both.
They are kept in SORT_KEYS order (`derived`, `clustered`): by backend, then by time, so
a question about one backend reads that backend's row groups of each file, and one about
the last nights (`gate`'s baseline) reads their row groups of each backend — 3 MB, not
8, of the million-run lake's summaries (the prune by campaign works where campaign names
sort as their nights do, as `night-0364` or a date does).
Coverage is kept like any Delta table's (`generations.DeltaState`: the run ids
summarised), so an interrupted compaction never counts a run twice: each run is named
once, in `run_ids` of the row of its first job × direction (naming it in every row was
16 M ids, 250 MB, at 1,000,000 runs). Written by hand because it is fiolake's own fold
of its own tables.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from fiolake import layout
from fiolake.aggregator.lake import columns, workloads
from fiolake.aggregator.lake.generations import DeltaState, Generation
from fiolake.schema import SCHEMAS
from fiolake.store import ObjectStore

TABLE = layout.SUMMARY_TABLE
SOURCES = ("runs", "results")  # the tables the summaries are folded from
METRICS: tuple[str, ...] = columns.HEADLINE_METRICS
KEY_COLUMN = "run_ids"  # runs first folded in each row: the coverage (`delta.keys_in`)
# The run attributes a row is one value of: a night's runs differ in few of them.
ATTRIBUTES = (
    "campaign_id", "backend", "profile", "workload_sha256", "role", "status", "fio_version",
    "origin", "target_kind", "fs_type", "flagged", "pre", "job_name", "direction", "steady",
)  # fmt: skip
# What the fold reads of each table (the rest of a year's columns are never decoded).
RUNS_COLUMNS = (
    "run_id", "campaign_id", "backend", "profile", "workload_sha256", "role", "status",
    "fio_version", "origin", "target_kind", "fs_type", "flags", "preconditioned_by",
    "started_at",
)  # fmt: skip
RESULTS_COLUMNS = ("run_id", "job_name", "direction", "steady_state", *METRICS)
MERGE_EVERY = 8  # `from_files` merges its files' rows after this many
# The order rows are kept in (`derived`): a question about one backend (`regressions
# --backend`) reads its row groups of each file, not the other backends'; one about a
# few nights (`gate`), their row groups of each backend (nights follow each other).
SORT_KEYS = ("backend", "min_at", "campaign_id", "profile", "job_name", "direction")
# The order before (files without an order in their name, `clustered.resort`): every
# campaign of a case together, so the last nights were in every row group.
LEGACY_SORT_KEYS = ("backend", "profile", "job_name", "direction", "campaign_id")
# Epoch microseconds past any start: where an ordering by start puts runs without one.
NO_START = 2**63 - 1


def metric_columns(metric: str) -> dict[str, str]:
    """The summary columns of one metric, by what they hold."""
    return {
        part: f"{metric}_{part}"
        for part in ("count", "nonpositive", "log_mean", "log_m2", "min", "max",
                     "first_run", "first_us", "last_run", "last_us")
    }  # fmt: skip


def column_names(*, with_ids: bool = True) -> list[str]:
    """The summary table's columns, in `partial_sql`'s order."""
    out = [*ATTRIBUTES, "runs", "min_at", "max_at", "undated"]
    for metric in METRICS:
        out += metric_columns(metric).values()
    return [*out, KEY_COLUMN] if with_ids else out


def runs_sql(runs: str, results: str, where: str, *, first_case: bool = False) -> str:
    """`WITH rr, per_run, j`: the runs of relation `runs` (aliased r) that satisfy `where`,
    one row per run × job × direction in `j` with the attributes of ATTRIBUTES, the start,
    each metric i of METRICS as "v{i}" (its threads folded by `columns.per_run_aggregate`,
    as every comparison folds them) and its log "l{i}" (NULL unless positive). With
    `first_case`, `j.first_case` marks each run's first job × direction."""
    per_run = ", ".join(f'{columns.per_run_aggregate(m)} AS "v{i}"' for i, m in enumerate(METRICS))
    logs = ", ".join(
        f'p."v{i}", CASE WHEN p."v{i}" > 0 THEN ln(p."v{i}") END AS "l{i}"'
        for i in range(len(METRICS))
    )
    first = (
        ", row_number() OVER (PARTITION BY run_id ORDER BY p.job_name, p.direction) = 1"
        " AS first_case"
        if first_case
        else ""
    )
    return f"""
        WITH rr AS (
            SELECT r.run_id, r.campaign_id, r.backend, r.profile, r.workload_sha256, r.role,
                   r.status, r.fio_version, r.origin, r.target_kind, r.fs_type,
                   coalesce(len(r.flags), 0) > 0 AS flagged,
                   r.preconditioned_by IS NOT NULL AS pre, r.started_at
            FROM {runs} r WHERE {where}
        ), per_run AS (
            SELECT x.run_id, x.job_name, x.direction, bool_and(x.steady_state) AS steady,
                   {per_run}
            FROM {results} x
            WHERE x.run_id IN (SELECT run_id FROM rr)
            GROUP BY ALL
        ), j AS (
            SELECT rr.*, p.job_name, p.direction, p.steady, {logs}{first}
            FROM per_run p JOIN rr USING (run_id)
        )"""


def moments(i: int, c: dict[str, str]) -> str:
    """SQL aggregates over `runs_sql`'s rows j of metric i, named by `c` (its columns):
    values, values ≤ 0, the positive values' log mean and M2 (sum of squared
    deviations), the range."""
    return (
        f'count(j."v{i}") AS "{c["count"]}", '
        f'count(*) FILTER (WHERE j."v{i}" <= 0) AS "{c["nonpositive"]}", '
        f'avg(j."l{i}") AS "{c["log_mean"]}", '
        f'coalesce(var_pop(j."l{i}") * count(j."l{i}"), 0) AS "{c["log_m2"]}", '
        f'min(j."v{i}") AS "{c["min"]}", max(j."v{i}") AS "{c["max"]}"'
    )


def chan_merge(n: str, mean: str, m2: str, mu: str) -> tuple[str, str]:
    """SQL of Chan et al.'s merge of partial log moments (`n` values, their `mean` and
    `m2`, SQL expressions of a row): the pooled mean over the rows of window `k`, and,
    aggregated over the same rows given that mean as `mu`, the pooled M2."""
    return (
        f"sum({n} * {mean}) OVER k / nullif(sum({n}) OVER k, 0)",
        f"coalesce(sum({m2} + {n} * ({mean} - {mu}) ^ 2) FILTER (WHERE {n} > 0), 0)",
    )


def partial_sql(runs: str, results: str, where: str, *, with_ids: bool = True) -> str:
    """Summary rows of the runs of relation `runs` (aliased r) that satisfy `where`, from
    their rows in relation `results` (`runs_sql`): one row per night × case × attributes
    (ATTRIBUTES), the columns of `metric_columns` for each of METRICS."""
    # A night's first and last run with a value, in the order (start, run id), runs
    # without a start last: the smallest and largest such pair, streamed (an ordered
    # aggregate holds every row of its group until the end).
    at = f"coalesce(epoch_us(j.started_at), {NO_START})"
    folded, split = [], []
    for i, metric in enumerate(METRICS):
        c = metric_columns(metric)
        has = f'FILTER (WHERE j."l{i}" IS NOT NULL)'
        folded.append(
            f"{moments(i, c)}, "
            f'min(struct_pack(a := {at}, r := j.run_id)) {has} AS "_first{i}", '
            f'max(struct_pack(a := {at}, r := j.run_id)) {has} AS "_last{i}"'
        )
        plain = ", ".join(f'"{c[p]}"' for p in list(c)[:6])
        split.append(
            f'{plain}, "_first{i}".r AS "{c["first_run"]}", '
            f'nullif("_first{i}".a, {NO_START}) AS "{c["first_us"]}", '
            f'"_last{i}".r AS "{c["last_run"]}", '
            f'nullif("_last{i}".a, {NO_START}) AS "{c["last_us"]}"'
        )
    # Each run once, in the row of its first job × direction (none in its other rows).
    ids = f', list(j.run_id) FILTER (WHERE j.first_case) AS "{KEY_COLUMN}"' if with_ids else ""
    return f"""{runs_sql(runs, results, where, first_case=with_ids)}, g AS (
            SELECT {", ".join(ATTRIBUTES)}, count(*) AS runs,
                   min(j.started_at) AS min_at, max(j.started_at) AS max_at,
                   count(*) FILTER (WHERE j.started_at IS NULL) AS undated,
                   {", ".join(folded)}{ids}
            FROM j GROUP BY {", ".join(ATTRIBUTES)}
        )
        SELECT {", ".join(ATTRIBUTES)}, runs, min_at, max_at, undated, {", ".join(split)}{
        f', "{KEY_COLUMN}"' if with_ids else ""
    }
        FROM g
    """


def summarise(
    runs: pa.Table, results: pa.Table, sql: Callable[[str, str, str], str] = partial_sql
) -> pa.Table:
    """Summary rows (`partial_sql`, or another fold `sql` of the same three arguments) of
    the runs in `runs`, from their `results` rows."""
    import duckdb  # only compaction folds Arrow tables here

    con = duckdb.connect()
    try:
        con.register("new_runs", runs.select(list(RUNS_COLUMNS)))
        con.register("new_results", results.select(list(RESULTS_COLUMNS)))
        return con.execute(sql("new_runs", "new_results", "true")).to_arrow_table()
    finally:
        con.close()


def read_rows(store: ObjectStore, table: str, files: Sequence[str], ids: pa.Array) -> pa.Table:
    """The rows of the runs `ids` in `table`'s Delta data files `files`, only the columns
    the fold reads (the ids read dictionary-encoded: a year's results rows are 16 M)."""
    import pyarrow.compute as pc  # compaction's: 40 ms no question need import

    names = list(RUNS_COLUMNS if table == "runs" else RESULTS_COLUMNS)
    parts = [pa.Table.from_batches([], SCHEMAS[table]).select(names)]
    for key in files:
        data, _ = store.get(key)
        rows = pq.read_table(io.BytesIO(data), columns=names, read_dictionary=["run_id"])
        run_ids = rows.column("run_id").cast(pa.string())
        wanted = pc.is_in(run_ids, value_set=ids)
        picked = rows.set_column(0, "run_id", run_ids).filter(wanted)
        if table == "runs" and picked.column(workloads.COLUMN).null_count:
            picked = _with_workloads(data, picked, wanted)
        parts.append(picked)
    return pa.concat_tables(parts, promote_options="permissive")


def _with_workloads(data: bytes, picked: pa.Table, wanted: pa.Array) -> pa.Table:
    """`picked` runs rows with the workload hash computed where the file has none, as the
    `runs` view computes it (`workloads`): rows compacted before the column existed."""
    texts = pq.read_table(io.BytesIO(data), columns=["canonical_job_file", "gang_size"])
    texts = texts.filter(wanted)
    whole = picked.append_column("canonical_job_file", texts.column("canonical_job_file"))
    whole = workloads.filled(whole.append_column("gang_size", texts.column("gang_size")))
    return whole.select(picked.column_names)


def uncovered(
    prev: Generation | None,
    states: dict[str, DeltaState],
    before: DeltaState | None,
    covered: pa.Array,
) -> pa.Array:
    """Run ids `results` covers and the summaries do not, sorted. After a normal night
    the summaries covered what `results` did, so only the ids `results` gained are
    looked at, not a year's (the cost of a night's compaction must follow the night)."""
    import pyarrow.compute as pc  # compaction's: 40 ms no question need import

    results = states["results"].key_array
    earlier = prev.delta.get("results") if prev is not None and not prev.legacy else None
    if before is not None and earlier is not None and len(covered) == earlier.key_count:
        fresh = results.slice(earlier.key_count)
        if covered.equals(results.slice(0, earlier.key_count)):
            return fresh
    missing = results.filter(pc.invert(pc.is_in(results, value_set=covered)))
    return missing.take(pc.sort_indices(missing))


def fold_new(
    store: ObjectStore,
    states: dict[str, DeltaState],
    appended: dict[str, pa.Table | None],
    new: pa.Array,
    sql: Callable[[str, str, str], str] = partial_sql,
    merge: Callable[[list[pa.Table]], pa.Table] = pa.concat_tables,
    every: int = MERGE_EVERY,
) -> pa.Table:
    """Summary rows (`sql`: see `summarise`) of the runs `new`: from the rows this
    compaction appended when those hold them all (a night: its runs are what `results`
    gained), else from the tables' files (`from_files`, `merge`, `every`)."""
    import pyarrow.compute as pc  # compaction's: 40 ms no question need import

    runs, results = appended.get("runs"), appended.get("results")
    if runs is not None:
        runs = runs.filter(pc.is_in(runs.column("run_id"), value_set=new))
    if runs is None or len(pc.unique(runs.column("run_id"))) != len(new):
        return from_files(store, states, new, sql, merge, every)
    if results is None:  # the night's runs have no results rows (all rejected)
        results = pa.Table.from_batches([], SCHEMAS["results"])
    return summarise(runs, results.filter(pc.is_in(results.column("run_id"), value_set=new)), sql)


def _ids_in_file(store: ObjectStore, key: str) -> pa.Array:
    """The distinct run ids of one Delta data file."""
    import pyarrow.compute as pc  # compaction's: 40 ms no question need import

    data, _ = store.get(key)
    ids = pq.read_table(io.BytesIO(data), columns=["run_id"], read_dictionary=["run_id"])
    return pc.unique(ids.column("run_id").combine_chunks().dictionary_decode())


def from_files(
    store: ObjectStore,
    states: dict[str, DeltaState],
    new: pa.Array,
    sql: Callable[[str, str, str], str] = partial_sql,
    merge: Callable[[list[pa.Table]], pa.Table] = pa.concat_tables,
    every: int = MERGE_EVERY,
) -> pa.Table:
    """Summary rows (`sql`) of the runs `new` from the compacted tables' files: a lake compacted
    before summaries existed (a year: 16 M results rows), or runs an interrupted
    compaction appended. One results file at a time, so memory follows a file, not the
    lake; a run whose rows two files share (an append or `optimize` can cut between a
    run's rows) is folded last, from all of them. `merge` joins the rows of several
    files into one table (after `every` files: rows that fold across files, as the case
    summaries' do, stay the size of one file's)."""
    import pyarrow.compute as pc  # compaction's: 40 ms no question need import

    runs = read_rows(store, "runs", states["runs"].files, new)
    files = list(states["results"].files)
    per_file = [_ids_in_file(store, key) for key in files]
    counts = pc.value_counts(pa.chunked_array(per_file, pa.string()))
    split = counts.field("values").filter(pc.greater(counts.field("counts"), 1))
    found = [summarise(runs.slice(0, 0), pa.Table.from_batches([], SCHEMAS["results"]), sql)]
    for key, ids in zip(files, per_file, strict=True):
        whole = ids.filter(pc.invert(pc.is_in(ids, value_set=split)))
        wanted = whole.filter(pc.is_in(whole, value_set=new))
        if len(wanted):
            rows = read_rows(store, "results", [key], wanted)
            found.append(summarise(_of(runs, wanted), rows, sql))
            if len(found) > every:
                found = [merge(found)]
    shared = split.filter(pc.is_in(split, value_set=new))
    if len(shared):
        holding = [
            key
            for key, ids in zip(files, per_file, strict=True)
            if pc.any(pc.is_in(ids, value_set=shared)).as_py()
        ]
        rows = read_rows(store, "results", holding, shared)
        found.append(summarise(_of(runs, shared), rows, sql))
    return merge(found)


def _of(rows: pa.Table, ids: pa.Array) -> pa.Table:
    """The rows of the runs `ids`."""
    import pyarrow.compute as pc  # compaction's: 40 ms no question need import

    return rows.filter(pc.is_in(rows.column("run_id"), value_set=ids))
