"""Run series: each run's headline values per job × direction, kept sorted by case.

A trend of one case over a year (`fiolake trend --backend B --profile P --job J
--direction D`) wants a few thousand values out of a year's 16 M result rows. `results`
is sorted by run, so every row group holds every case and the query read a year's
values over HTTP: 1.5 s of a 2.3 s trend at 1,000,000 runs on MinIO (issue 44).
Compaction now also writes, for the runs it appends, one row per run × job × direction
to the Delta table `run_series`: the run's attributes a filter names (RunFilter), its
case as one key column (CASE_KEY), and its value of each headline metric (its threads
folded by `columns.per_run_aggregate`, as every question folds them). A night's rows
are appended sorted by SORT_KEYS in small row groups and merged in levels into files
sorted the same way (`clustered`), so one case's rows of a year sit in about one row
group of each of a dozen files.

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
from fiolake.aggregator.lake import summaries
from fiolake.aggregator.lake.derived import Derived
from fiolake.schema import SCHEMAS

TABLE = layout.SERIES_TABLE
METRICS = summaries.METRICS
# The runs' attributes a trend shows or a RunFilter names (of `summaries.runs_sql`'s rr):
# every column more is a column chunk in each row group's footer entry, and a reader reads
# every footer of the table (with 22 columns, 40 files held 8.5 MB of them at 1,000,000
# runs; with these 14, 1.7 MB).
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


SPEC = Derived(TABLE, rows_sql, SORT_KEYS, ROW_GROUP_ROWS)
