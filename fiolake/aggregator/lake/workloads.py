"""The `runs.workload_sha256` column for runs written before it existed (`fiolake.workload`).

Runs written since carry it. For older per-run files (and rows compacted before it), the
`runs` view computes it from `canonical_job_file` and `gang_size` through a DuckDB function
registered on every lake connection; `lake compact` writes it into the rows it appends, so
other engines reading the Delta tables see it for those. No run's results change: the
column is derived from text the lake already holds.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
from duckdb.func import FunctionNullHandling

from fiolake.workload import workload_sha256

COLUMN = "workload_sha256"
FUNCTION = "fiolake_workload_sha256"


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Make `fiolake_workload_sha256(canonical_job_file, gang_size)` callable on `con`."""
    con.create_function(
        FUNCTION,
        lambda text, gang: workload_sha256(text, gang),
        ["VARCHAR", "INTEGER"],
        "VARCHAR",
        null_handling=FunctionNullHandling.SPECIAL,  # a NULL gang_size is a solo run
        side_effects=False,
    )


def view_column(present: set[str]) -> str:
    """The `runs` view's select item for the column: the recorded value, else computed
    (`present`: the columns the runs files have)."""
    recorded = f'"{COLUMN}"' if COLUMN in present else "CAST(NULL AS VARCHAR)"
    if "canonical_job_file" not in present:
        return f'{recorded} AS "{COLUMN}"'
    gang = '"gang_size"' if "gang_size" in present else "CAST(NULL AS INTEGER)"
    return (
        f"CASE WHEN {recorded} IS NULL AND canonical_job_file IS NOT NULL "
        f'THEN {FUNCTION}(canonical_job_file, {gang}) ELSE {recorded} END AS "{COLUMN}"'
    )


def filled(runs: pa.Table) -> pa.Table:
    """`runs` rows (already in the current schema) with the column computed where null."""
    if COLUMN not in runs.column_names or runs.column(COLUMN).null_count == 0:
        return runs
    texts = runs.column("canonical_job_file").to_pylist()
    gangs = runs.column("gang_size").to_pylist()
    recorded = runs.column(COLUMN).to_pylist()
    values = [
        value if value is not None else workload_sha256(text, gang)
        for value, text, gang in zip(recorded, texts, gangs, strict=True)
    ]
    index = runs.column_names.index(COLUMN)
    return runs.set_column(index, COLUMN, pa.array(values, pa.string()))
