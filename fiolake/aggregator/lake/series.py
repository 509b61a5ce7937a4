"""Run series: each run's headline values per job × direction, kept sorted by case.

A trend of one case over a year (`fiolake trend --backend B --profile P --job J
--direction D`) wants a few thousand values out of a year's 16 M result rows. `results`
is sorted by run, so every row group holds every case and the query read a year's
values over HTTP: 1.5 s of a 2.3 s trend at 1,000,000 runs on MinIO (issue 44).
Compaction now also writes, for the runs it appends, one row per run × job × direction
to the Delta table `run_series`: the run's attributes a filter names (RunFilter), its
case as one key column (CASE_KEY), and its value of each headline metric (its threads
folded by `columns.per_run_aggregate`, as every question folds them). A night's rows
are appended sorted by SORT_KEYS in small row groups; once more than `delta.MAX_FILES`
nights gather they are merged into files sorted the same way (`clustered`), so one
case's rows of a year sit in about one row group per file.

Derived like the night summaries (`summaries`): the same fold, the same coverage (the
run ids the table covers, in the generation record), the same recovery of an
interrupted compaction, and a lake compacted before the table existed gets it from the
tables' files at its next compaction. Readers use it only when it covers every compacted
run (`covered`), and read runs not compacted yet from the views.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from fiolake import layout
from fiolake.aggregator.lake import clustered, delta, summaries
from fiolake.aggregator.lake.coveredids import no_ids
from fiolake.aggregator.lake.generations import DeltaState, Generation
from fiolake.schema import SCHEMAS
from fiolake.store import ObjectStore

TABLE = layout.SERIES_TABLE
METRICS = summaries.METRICS
# The runs' attributes a trend shows or a RunFilter names (of `summaries.runs_sql`'s rr):
# every column more is a column chunk in each row group's footer entry, and a reader reads
# every footer of the table (40 files, 0.2 MB each at 1,000,000 runs).
ATTRIBUTES = ("run_id", "campaign_id", "backend", "profile", "role", "status", "started_at")
# One column naming the case, so a row group's statistics bound it exactly: with four
# columns a row group from one profile's job5 to the next profile's job0 matches every job
# and profile in between (4–5 row groups per file matched a case; 1–2 do with the key).
CASE_KEY = "case_key"
CASE_PARTS = ("backend", "profile", "job_name", "direction")
SEPARATOR = "\x1f"  # chr(31), the unit separator: sorts before every printable character
SORT_KEYS = (CASE_KEY, "started_at", "run_id")
# A night (3,000 runs, 48,000 rows) in 3 row groups; a case of a merged file in one.
ROW_GROUP_ROWS = 16_384


def rows_sql(runs: str, results: str, where: str) -> str:
    """Series rows of the runs of relation `runs` (aliased r) that satisfy `where`, from
    their rows in relation `results`: one per run × job × direction (`summaries.runs_sql`)."""
    values = ", ".join(f'{_stored(i, m)} AS "{m}"' for i, m in enumerate(METRICS))
    attributes = ", ".join(f"j.{a}" for a in ATTRIBUTES)
    key = " || ".join(f"j.{part} || chr(31)" for part in CASE_PARTS)
    return f"""{summaries.runs_sql(runs, results, where)}
        SELECT {attributes}, j.job_name, j.direction, {values}, {key} AS {CASE_KEY}
        FROM j"""


def case_prefix(parts: Sequence[str]) -> str:
    """The start of the case key of every row whose first len(parts) CASE_PARTS are
    `parts`: a row's key is each of its parts followed by SEPARATOR. Every key starting
    so, and no other, sorts in [prefix, prefix[:-1] + chr(32)) (SEPARATOR is chr(31))."""
    return "".join(f"{part}{SEPARATOR}" for part in parts)


def _stored(i: int, metric: str) -> str:
    """Metric i's per-run value as stored: a sum of an integer column is DuckDB's HUGEINT,
    which Parquet holds as DECIMAL(38, 0) and gives back as Python Decimal; BIGINT holds
    any such sum (bytes/s) and reads back as the int the views' fold gives."""
    if pa.types.is_integer(SCHEMAS["results"].field(metric).type):
        return f'CAST(j."v{i}" AS BIGINT)'
    return f'j."v{i}"'


def compact_series(
    store: ObjectStore,
    prev: Generation | None,
    states: dict[str, DeltaState],
    appended: dict[str, pa.Table | None],
    generation: int,
) -> tuple[DeltaState | None, int]:
    """Add the series rows of the runs `results` covers and the table does not; its state
    for the generation and how many runs were new to it. None when this compaction left
    `runs` or `results` out, or no run has results rows yet: readers then read `results`."""
    if "runs" not in states or "results" not in states:
        return None, 0
    before = prev.delta.get(TABLE) if prev is not None and not prev.legacy else None
    dt = delta.open_table(store, TABLE)
    recorded = (before.version, before.files) if before else None
    covered = delta.with_recovered(
        store, dt, TABLE, recorded, before.key_array if before else no_ids()
    )
    new = summaries.uncovered(prev, states, before, covered)
    written = [0]  # rows written for `new` (runs without results rows have none)
    if len(new):
        # A lake's history (an upgrade) is written as merged files after each results
        # file, so memory follows one file, not the lake; a night is appended.
        def write_merged(parts: list[pa.Table]) -> pa.Table:
            rows = pa.concat_tables(parts, promote_options="permissive")
            if rows.num_rows:
                clustered.add_sorted(store, TABLE, rows, SORT_KEYS, ROW_GROUP_ROWS)
                written[0] += rows.num_rows
            return rows.slice(0, 0)

        rows = summaries.fold_new(store, states, appended, new, rows_sql, write_merged, every=1)
        if rows.num_rows:
            ordered = clustered.sort_rows(rows, SORT_KEYS)
            delta.append(store, TABLE, ordered, generation, ROW_GROUP_ROWS)
            written[0] += rows.num_rows
        dt = delta.open_table(store, TABLE)
    if dt is None:  # no run has results rows yet
        return None, 0
    dt = clustered.merge_appends(store, dt, TABLE, SORT_KEYS, ROW_GROUP_ROWS)
    files, count = delta.data_files(store, dt, TABLE)
    ids = pa.concat_arrays([covered, new.cast(pa.string())])
    covers = states["results"].covers_index and len(ids) == states["results"].key_count
    state = DeltaState(TABLE, dt.version(), tuple(files), ids, count, covers_index=covers)
    return state, len(new) if written[0] else 0
