"""Case summaries: every compacted run of each case folded once, kept per generation.

`compare` over all runs pooled asks, per backend × profile × workload × job × direction,
for the moments of every run's log values and for the runs whose robust z (against the
median and MAD of the case's logs) passes 3.5. At 1,000,000 runs that was 16 M result
rows folded per question, 17–22 s and 6 GB (issue 44). Compaction now keeps, beside each
generation record, one Parquet object with one row per case × run attributes
(`summaries.ATTRIBUTES` but the night), holding for each headline metric:

- the runs with a value, those ≤ 0, the mean and M2 of the positive values' logs, the
  range: merged exactly (Chan et al.), as the night summaries are;
- a histogram of the logs in bins of BIN (2⁻¹² ≈ 0.024 %): counts add, so the merged
  histogram of any set of rows is the histogram of their runs. The median and MAD taken
  from it place each value at its bin's centre, at most BIN/2 away, so both are within
  BIN/2 and BIN of the exact ones (docs/statistics.md, "Outliers of a pooled question");
- the TOP smallest and TOP largest logs with their run ids: the TOP extremes of a union
  are among the TOP extremes of its parts, so they merge exactly too, and hold every
  outlier of a case unless one side has more than TOP (then readers fold every run).

Each compaction folds the runs it summarised into the previous generation's object and
writes a new one (a few hundred rows: its cost follows the night, not the history); a
lake without one gets it from the tables' files. The record names the object and how
many of the night summaries' covered runs it folds, so a reader knows it is whole.
Written by hand: a fold of fiolake's own tables; no library keeps a mergeable histogram
and top lists per group of an Arrow table.
"""

from __future__ import annotations

import io
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from fiolake import layout
from fiolake.aggregator.lake import summaries
from fiolake.aggregator.lake.generations import DeltaState, Generation
from fiolake.errors import NotFound
from fiolake.store import ObjectStore

METRICS = summaries.METRICS
# A case's run attributes: the night summaries' but the night itself.
KEYS = tuple(a for a in summaries.ATTRIBUTES if a != "campaign_id")
SCALE = 4096  # histogram bins per unit of ln(value): BIN = 1 / SCALE
BIN = 1.0 / SCALE
TOP = 256  # extremes kept per side, metric and case


def metric_columns(metric: str) -> dict[str, str]:
    """The case summary's columns of one metric, by what they hold."""
    return {
        part: f"{metric}_{part}"
        for part in ("count", "nonpositive", "log_mean", "log_m2", "min", "max", "hist", "low",
                     "high")
    }  # fmt: skip


def _extreme(i: int) -> str:
    """The (log, run id) struct of metric i of a run × job × direction row of `j`."""
    return f'struct_pack(l := j."l{i}", r := j.run_id)'


def partial_sql(runs: str, results: str, where: str) -> str:
    """Case summary rows of the runs of relation `runs` (aliased r) that satisfy `where`,
    from their rows in `results` (`summaries.runs_sql`): one row per KEYS value."""
    folded = []
    for i, metric in enumerate(METRICS):
        c = metric_columns(metric)
        has = f'FILTER (WHERE j."l{i}" IS NOT NULL)'
        folded.append(
            f"{summaries.moments(i, c)}, "
            f'histogram(CAST(floor(j."l{i}" * {SCALE}) AS INTEGER)) {has} AS "{c["hist"]}", '
            f'min_by({_extreme(i)}, {_extreme(i)}, {TOP}) {has} AS "{c["low"]}", '
            f'max_by({_extreme(i)}, {_extreme(i)}, {TOP}) {has} AS "{c["high"]}"'
        )
    keys = ", ".join(KEYS)
    return f"""{summaries.runs_sql(runs, results, where)}
        SELECT {keys}, count(*) AS runs, {", ".join(folded)}
        FROM j GROUP BY {keys}
    """


def merged_sql(partial: str, keys: tuple[str, ...]) -> str:
    """Rows of relation `partial` (case summary columns) merged per value of the columns
    `keys` (NULL a value like any other): counts added, mean and M2 by Chan et al.'s
    update, ranges widened, histograms added bin by bin, the TOP extremes of the union
    kept: compaction's merge of the previous object with a night's rows. A key of one
    row passes its histograms and extremes through (unnesting a histogram to add it to
    nothing is most of the cost)."""
    key_list = ", ".join(keys)
    mu, merged, hists, sketch, lone = [], [], [], [], []
    for i, metric in enumerate(METRICS):
        c = metric_columns(metric)
        n = f'("{c["count"]}" - "{c["nonpositive"]}")'
        mean, m2 = f'"{c["log_mean"]}"', f'"{c["log_m2"]}"'
        pooled, spread = summaries.chan_merge(n, mean, m2, f'"mu{i}"')
        mu.append(f'{pooled} AS "mu{i}"')
        merged.append(
            f'CAST(sum("{c["count"]}") AS BIGINT) AS "{c["count"]}", '
            f'CAST(sum("{c["nonpositive"]}") AS BIGINT) AS "{c["nonpositive"]}", '
            f'any_value("mu{i}") AS "{c["log_mean"]}", '
            f'{spread} AS "{c["log_m2"]}", '
            f'min("{c["min"]}") AS "{c["min"]}", max("{c["max"]}") AS "{c["max"]}"'
        )
        sketch.append(
            f'list_slice(list_sort(flatten(list("{c["low"]}") '
            f'FILTER (WHERE "{c["low"]}" IS NOT NULL))), 1, {TOP}) AS "{c["low"]}", '
            f'list_slice(list_reverse_sort(flatten(list("{c["high"]}") '
            f'FILTER (WHERE "{c["high"]}" IS NOT NULL))), 1, {TOP}) AS "{c["high"]}", '
            f'any_value(h{i}."{c["hist"]}") AS "{c["hist"]}"'
        )
        lone += [f'"{c["low"]}"', f'"{c["high"]}"', f'"{c["hist"]}"']
        hists.append(
            f"""h{i} AS (
                SELECT kid, map_from_entries(list(struct_pack(k := b, v := n) ORDER BY b))
                       AS "{c["hist"]}"
                FROM (
                    SELECT kid, b, CAST(sum(n) AS UBIGINT) AS n
                    FROM (SELECT kid, unnest(map_keys("{c["hist"]}")) AS b,
                                 unnest(map_values("{c["hist"]}")) AS n
                          FROM many WHERE "{c["hist"]}" IS NOT NULL)
                    GROUP BY kid, b
                ) GROUP BY kid
            )"""
        )
    heads = ", ".join(f"any_value({k}) AS {k}" for k in keys)
    joins = " ".join(f"LEFT JOIN h{i} USING (kid)" for i in range(len(METRICS)))
    heavy = [
        v for m in METRICS for k, v in metric_columns(m).items() if k in ("hist", "low", "high")
    ]
    # The windows see the keys and scalars only (`light`): carried through their sort,
    # the histograms and extremes cost 0.14 s of 0.25 for a year's 320 rows.
    return f"""
        WITH p AS MATERIALIZED (
            SELECT row_number() OVER () AS rid, * FROM ({partial})
        ), light AS (
            SELECT *, dense_rank() OVER (ORDER BY {key_list}) AS kid,
                   count(*) OVER (PARTITION BY {key_list}) AS parts
            FROM (SELECT * EXCLUDE ({", ".join(f'"{h}"' for h in heavy)}) FROM p)
        ), w AS (
            SELECT *, {", ".join(mu)} FROM light WINDOW k AS (PARTITION BY kid)
        ), m AS (
            SELECT kid, {heads}, CAST(sum(runs) AS BIGINT) AS runs, {", ".join(merged)}
            FROM w GROUP BY kid
        ), many AS (
            SELECT light.kid, p.* FROM light JOIN p USING (rid) WHERE light.parts > 1
        ), {", ".join(hists)}, sketched AS (
            SELECT light.kid, {", ".join(f"p.{x}" for x in lone)}
            FROM light JOIN p USING (rid) WHERE light.parts = 1
            UNION ALL
            SELECT kid, {", ".join(sketch)} FROM many {joins} GROUP BY kid
        )
        SELECT m.* EXCLUDE (kid), sketched.* EXCLUDE (kid)
        FROM m JOIN sketched USING (kid)
    """


def column_order() -> list[str]:
    """The object's columns, in `partial_sql`'s order."""
    return [*KEYS, "runs", *(v for m in METRICS for v in metric_columns(m).values())]


def _merge(parts: list[pa.Table]) -> pa.Table:
    """The case summary of the runs of all `parts` (each a case summary)."""
    import duckdb  # only compaction merges Arrow tables here

    con = duckdb.connect()
    try:
        whole = [p.select(column_order()) for p in parts]
        con.register("parts", pa.concat_tables(whole, promote_options="permissive"))
        merged = con.execute(merged_sql("SELECT * FROM parts", KEYS)).to_arrow_table()
    finally:
        con.close()
    return merged.select(column_order())


def read(store: ObjectStore, key: str) -> pa.Table:
    """A generation's case summaries."""
    data, _ = store.get(key)
    return pq.read_table(io.BytesIO(data))


def _still_folded(prev: Generation | None, covered: pa.Array) -> int:
    """How many of `covered` (the night summaries' ids now, in the order they were
    added) the previous generation's case summaries fold: its count when they are the
    first that many of the ids the previous night summaries covered, else 0 (none kept,
    or a record whose ids were rebuilt from files, in another order)."""
    if prev is None or prev.legacy or prev.mended or not prev.cases_file:
        return 0
    before = prev.delta.get(summaries.TABLE)
    count = prev.cases_runs
    if before is None or count > before.key_count or count > len(covered):
        return 0
    return count if covered.slice(0, count).equals(before.key_array.slice(0, count)) else 0


def compact_cases(
    store: ObjectStore,
    prev: Generation | None,
    states: dict[str, DeltaState],
    appended: dict[str, pa.Table | None],
    generation: int,
) -> tuple[str | None, int, int]:
    """The case summaries of every run the night summaries now cover: the previous
    generation's object when it folds them all, else a new object that adds the rest
    (the night's runs, from the rows this compaction appended; or, for a lake without
    one, every run from the tables' files). Returns (object key, runs it folds, runs
    this call folded in); (None, 0, 0) without night summaries."""
    state = states.get(summaries.TABLE)
    if state is None:
        return None, 0, 0
    covered = state.key_array
    kept = _still_folded(prev, covered)
    if kept == len(covered) and prev is not None:
        return prev.cases_file, kept, 0
    parts = []
    if kept and prev is not None and prev.cases_file:
        try:
            parts.append(read(store, prev.cases_file))
        except NotFound:  # deleted behind the record's back: every run folded again
            kept = 0
    todo = covered.slice(kept)
    parts.append(summaries.fold_new(store, states, appended, todo, partial_sql, _merge))
    merged = _merge(parts)
    key = layout.generation_cases_key(generation, uuid.uuid4().hex[:16])
    out = io.BytesIO()
    pq.write_table(merged, out, compression="zstd")
    store.put(key, out.getvalue())
    return key, len(covered), len(todo)
