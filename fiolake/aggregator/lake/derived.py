"""Compaction of a table derived from `runs` and `results`, kept sorted for its readers.

The night summaries (`summaries`) and the run series (`series`) are folds of the runs a
compaction appends, each a Delta table beside the lake's. Both are compacted the same way,
here: the runs `results` covers and the table does not are folded with the table's SQL
(from the rows this compaction appended — a night — or, for a lake compacted before the
table existed, from the tables' files, one results file at a time, written out as it goes
so memory follows a file or two); the rows are written sorted by the table's key, and
appended files are merged in levels into files sorted the same way (`clustered`), so a
reader's row-group statistics find one backend's or one case's rows without reading
the others, in a dozen files rather than a year of them. Coverage is the run ids
folded, as for the lake's tables, so an interrupted compaction never folds a run twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from fiolake.aggregator.lake import clustered, delta, summaries
from fiolake.aggregator.lake.coveredids import no_ids
from fiolake.aggregator.lake.generations import DeltaState, Generation
from fiolake.store import ObjectStore


@dataclass(frozen=True)
class Derived:
    """What a derived table is: its name, its fold and its order."""

    table: str
    # (runs relation, results relation, condition on runs aliased r) -> SQL of the
    # table's rows for those runs (`summaries.partial_sql`, `series.rows_sql`).
    sql: Callable[[str, str, str], str]
    sort_keys: tuple[str, ...]
    row_group_rows: int
    # Rows of a lake's history gathered before they are written as one file: its memory.
    file_rows: int = clustered.MERGED_ROWS
    # The order of files written before their names carried theirs (`clustered.resort`);
    # None: the same as sort_keys.
    legacy_sort_keys: tuple[str, ...] | None = None


def compact_derived(
    spec: Derived,
    store: ObjectStore,
    prev: Generation | None,
    states: dict[str, DeltaState],
    appended: dict[str, pa.Table | None],
    generation: int,
) -> tuple[DeltaState | None, int]:
    """Fold into `spec.table` the runs `results` covers and it does not; its state for the
    generation and how many runs were new to it (0 when none had rows to fold: runs
    without results rows are covered all the same). No state (None) when this compaction
    left `runs` or `results` out, or the lake has no results yet: readers then fold
    every run themselves."""
    if "runs" not in states or "results" not in states:
        return None, 0
    table = spec.table
    before = prev.delta.get(table) if prev is not None and not prev.legacy else None
    dt = delta.open_table(store, table)
    # Runs an interrupted compaction folded after the generation's version: their rows
    # are in the table, so they are not folded again.
    recorded = (before.version, before.files) if before else None
    covered = delta.with_recovered(
        store, dt, table, recorded, before.key_array if before else no_ids()
    )
    new = summaries.uncovered(prev, states, before, covered)
    written = [0]  # rows written for `new` (runs without results rows have none)
    if len(new):

        def write_sorted(parts: list[pa.Table]) -> pa.Table:
            """Called after each results file of a lake's history: its rows gather until
            a top-level file's worth (few files: each costs a reader a footer)."""
            rows = pa.concat_tables(parts, promote_options="permissive")
            if rows.num_rows < spec.file_rows:
                return rows
            clustered.add_sorted(
                store, table, rows, spec.sort_keys, spec.row_group_rows, file_rows=spec.file_rows
            )
            written[0] += rows.num_rows
            return rows.slice(0, 0)

        rows = summaries.fold_new(store, states, appended, new, spec.sql, write_sorted, every=1)
        if rows.num_rows and written[0]:  # the rest of a lake's history
            clustered.add_sorted(
                store, table, rows, spec.sort_keys, spec.row_group_rows, file_rows=spec.file_rows
            )
        elif rows.num_rows > spec.row_group_rows:  # a history, or a big night: its order named
            clustered.add_sorted(
                store, table, rows, spec.sort_keys, spec.row_group_rows, at_level=0
            )
        elif rows.num_rows:  # a night's runs: appended, merged with others later
            ordered = clustered.sort_rows(rows, spec.sort_keys)
            delta.append(store, table, ordered, generation, spec.row_group_rows)
        written[0] += rows.num_rows
        dt = delta.open_table(store, table)
    if dt is None:  # nothing to fold yet (runs without results rows)
        return None, 0
    dt = clustered.merge_levels(store, dt, table, spec.sort_keys, spec.row_group_rows)
    legacy = spec.legacy_sort_keys or spec.sort_keys
    dt = clustered.resort(store, dt, table, spec.sort_keys, spec.row_group_rows, legacy)
    files, count = delta.data_files(store, dt, table)
    ids = pa.concat_arrays([covered, new.cast(pa.string())])
    covers = states["results"].covers_index and len(ids) == states["results"].key_count
    state = DeltaState(table, dt.version(), tuple(files), ids, count, covers_index=covers)
    return state, len(new) if written[0] else 0


# Row groups of 8,192 rows: a merged file of 9 nights (43,000 rows at the bench's fleet)
# keeps each of its 4 backends in its own few, and a backend's 10 nights in one or two;
# 65,536 would mix them all. A row holds 61 columns, so a lake's history is written
# 500,000 rows a file (2,000,000 took 3.3 GB).
NIGHT_SUMMARIES = Derived(
    summaries.TABLE,
    summaries.partial_sql,
    summaries.SORT_KEYS,
    8_192,
    file_rows=500_000,
    legacy_sort_keys=summaries.LEGACY_SORT_KEYS,
)
