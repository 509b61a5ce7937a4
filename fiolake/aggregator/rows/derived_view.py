"""The view over a table compaction derives (night summaries, run series), made on first use.

A connect binds no view a question may not need; the first question that reads a derived
table makes its view, once, under a lock: the app's sessions share one connection from
several threads, and two catalog writes at once conflict.
"""

from __future__ import annotations

import threading

from fiolake.aggregator.lake.lake import INTERNAL_SCHEMA, Lake
from fiolake.aggregator.lake.sqltext import parquet_source

_LOCK = threading.Lock()


def name(table: str) -> str:
    """The view's name for derived `table`."""
    return f"{INTERNAL_SCHEMA}.{table}"


def covers_compacted(lake: Lake, table: str) -> bool:
    """Whether derived `table` covers exactly the runs the compacted `runs` and `results`
    cover. A compaction that left out `runs` or `results` (`--table`), or one of a version
    before the table, leaves it behind: then questions fold every run from the views."""
    gen = lake.compacted
    if gen is None or gen.legacy or not {"runs", "results"} <= set(lake.files):
        return False
    states = [gen.delta.get(t) for t in (table, "runs", "results")]
    return all(states) and len({s.key_count for s in states if s}) == 1


def ensure(lake: Lake, table: str, *, one_schema: bool = False) -> str:
    """Create the view of `table`'s files in the lake's compaction generation unless it
    exists; its name. `one_schema`: every file is known to hold the same columns, so the
    view binds from one footer instead of reading each to line them up."""
    files = lake.compacted.files(table)  # type: ignore[union-attr]
    paths = [lake.store.location(k) for k in files]
    source = parquet_source(paths, hive=False, one_schema=one_schema and len(paths) > 1)
    with _LOCK:
        cur = lake.cursor()
        try:
            cur.execute(f"CREATE VIEW IF NOT EXISTS {name(table)} AS SELECT * FROM {source}")
        finally:
            cur.close()
    return name(table)
