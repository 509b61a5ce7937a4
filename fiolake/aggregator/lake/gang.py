"""Gang jobs in the lake: member rows and the gang's aggregate, as DuckDB views.

A gang's N member runs (runs.gang_size = N) started within a few ms of one instant by
the store's clock (runs.start_skew_ms), so their per-second windows line up: second k
of every member is second k of the gang. Views (docs/gangs.md):

- `gang_members`: one row per member run, with its slot, start skew and clock offset.
- `gang_seconds`: per gang job × fio job × direction × second, the members' bytes and
  I/Os summed (threads and members), over the seconds every member logged in full.
- `gang_results`: per gang job × fio job × direction, elbencho's two figures — "first
  done" (bandwidth and IOPS summed over the window in which every member still ran)
  and "last done" (everything moved until the slowest member finished) — and latency
  percentiles from the members' summed json+ bins (exact: fio's own method on the
  merged histogram, fiolake.fio_bins; never an average of percentiles).
"""

from __future__ import annotations

import io
from collections.abc import Collection
from typing import NamedTuple, Protocol

import duckdb
import pyarrow as pa
from duckdb.func import FunctionNullHandling

from fiolake.aggregator.lake.generations import DeltaState, Generation
from fiolake.fio_bins import bin_percentiles
from fiolake.layout import TABLES
from fiolake.store import ObjectStore


class RunFilter(Protocol):
    """aggregator.rows.filters.RunFilter (imported by name there would be a cycle via lake)."""

    def where(self, alias: str = "runs", *, any_role: bool = False) -> str: ...


# The `runs` rows of the runners' files alone (`lake` creates it beside `runs`).
UNCOMPACTED_RUNS = "_fiolake.uncompacted_runs"
# Percentiles of `gang_results` (column -> percentile), fio's usual ones.
GANG_PERCENTILES: dict[str, float] = {
    "clat_p50_ns": 50.0,
    "clat_p99_ns": 99.0,
    "clat_p999_ns": 99.9,
}

_MEMBERS = """
CREATE VIEW gang_members AS
SELECT job_id, campaign_id, backend, profile, gang_size, gang_slot, gang_attempt, run_id,
       runner, host, status, gang_start_at, start_skew_ms, clock_offset_ms,
       clock_offset_error_ms, started_at, finished_at, effective_job_sha256
FROM runs WHERE gang_size IS NOT NULL
"""

# Per member × fio job × direction × second: threads summed, whole windows only.
_MEMBER_SECONDS = """
CREATE VIEW _fiolake.gang_member_seconds AS
SELECT m.job_id, m.run_id, t.job_name, t.direction, t.second,
       sum(t.io_bytes) AS io_bytes, sum(t.ios) AS ios
FROM timeseries t JOIN gang_members m USING (run_id)
WHERE NOT coalesce(t.partial, false)
GROUP BY m.job_id, m.run_id, t.job_name, t.direction, t.second
"""

# The common window: seconds 1..S where S is the shortest member's last whole second.
_WINDOW = """
CREATE VIEW _fiolake.gang_window AS
SELECT job_id, job_name, direction, count(*) AS members, min(last_s) AS first_done_s
FROM (SELECT job_id, run_id, job_name, direction, max(second) AS last_s
      FROM _fiolake.gang_member_seconds GROUP BY job_id, run_id, job_name, direction)
GROUP BY job_id, job_name, direction
"""

_SECONDS = """
CREATE VIEW gang_seconds AS
SELECT s.job_id, s.job_name, s.direction, s.second, count(*) AS members,
       sum(s.io_bytes) AS io_bytes, sum(s.ios) AS ios
FROM _fiolake.gang_member_seconds s JOIN _fiolake.gang_window w
  USING (job_id, job_name, direction)
WHERE s.second <= w.first_done_s
GROUP BY s.job_id, s.job_name, s.direction, s.second
"""

_RESULTS = """
CREATE VIEW gang_results AS
WITH first_done AS (
  SELECT job_id, job_name, direction, sum(io_bytes) AS bytes, sum(ios) AS ios
  FROM gang_seconds GROUP BY job_id, job_name, direction
), last_done AS (
  SELECT m.job_id, r.job_name, r.direction, sum(r.io_bytes) AS bytes,
         sum(r.total_ios) AS ios, max(r.runtime_ms) AS runtime_ms
  FROM results r JOIN gang_members m USING (run_id)
  GROUP BY m.job_id, r.job_name, r.direction
), bins AS (
  SELECT m.job_id, b.job_name, b.direction, b.value_ns, sum(b.count) AS count
  FROM latency_bins b JOIN gang_members m USING (run_id)
  WHERE b.lat_type = 'clat'
  GROUP BY m.job_id, b.job_name, b.direction, b.value_ns
), hist AS (
  SELECT job_id, job_name, direction, list(value_ns ORDER BY value_ns) AS v,
         list(CAST(count AS BIGINT) ORDER BY value_ns) AS c
  FROM bins GROUP BY job_id, job_name, direction
), gang AS (
  SELECT job_id, any_value(campaign_id) AS campaign_id, any_value(backend) AS backend,
         any_value(profile) AS profile, any_value(gang_size) AS gang_size,
         any_value(effective_job_sha256) AS effective_job_sha256,
         max(start_skew_ms) - min(start_skew_ms) AS start_skew_ms,
         bool_and(status = 'ok') AS all_ok
  FROM gang_members GROUP BY job_id
)
SELECT g.job_id, g.campaign_id, g.backend, g.profile, g.gang_size, l.job_name, l.direction,
       w.members, g.start_skew_ms,
       w.first_done_s, f.bytes AS first_done_io_bytes,
       CAST(f.bytes / w.first_done_s AS BIGINT) AS first_done_bw_bytes,
       f.ios / w.first_done_s AS first_done_iops,
       l.runtime_ms / 1000.0 AS last_done_s, l.bytes AS last_done_io_bytes,
       CAST(l.bytes * 1000.0 / l.runtime_ms AS BIGINT) AS last_done_bw_bytes,
       l.ios * 1000.0 / l.runtime_ms AS last_done_iops,
       {percentiles},
       g.all_ok, g.effective_job_sha256
FROM gang g
JOIN last_done l USING (job_id)
LEFT JOIN _fiolake.gang_window w USING (job_id, job_name, direction)
LEFT JOIN first_done f USING (job_id, job_name, direction)
LEFT JOIN hist h USING (job_id, job_name, direction)
"""


def _bin_percentile(values: list[int] | None, counts: list[int] | None, p: float) -> int | None:
    if not values or not counts:
        return None
    return bin_percentiles(dict(zip(values, counts, strict=True)), [p])[0]


def percentile_columns() -> str:
    """The percentile columns of `gang_results` (fio's method on the members' bins)."""
    return ", ".join(
        f"fio_bin_percentile(h.v, h.c, CAST({p} AS DOUBLE)) AS {name}"
        for name, p in GANG_PERCENTILES.items()
    )


def view_statements(percentiles: str) -> list[str]:
    """The CREATE VIEW statements of the gang views, in order, with `percentiles` as the
    percentile columns of `gang_results` (docs/engines.md renders them for other engines)."""
    return [_MEMBERS, _MEMBER_SECONDS, _WINDOW, _SECONDS, _RESULTS.format(percentiles=percentiles)]


def register_functions(con: duckdb.DuckDBPyConnection) -> None:
    """Register `fio_bin_percentile(values, counts, p)`, which `gang_results` uses."""
    con.create_function(
        "fio_bin_percentile",
        _bin_percentile,
        [duckdb.sqltype("BIGINT[]"), duckdb.sqltype("BIGINT[]"), duckdb.sqltype("DOUBLE")],
        duckdb.sqltype("BIGINT"),
        null_handling=FunctionNullHandling.SPECIAL,
    )


# The lake tables each gang view reads (through the views before it).
_READS = [{"runs"}, {"timeseries"}, set(), set(), {"results", "latency_bins"}]


def create_views(con: duckdb.DuckDBPyConnection, tables: Collection[str] = TABLES) -> None:
    """Create `gang_members`, `gang_seconds` and `gang_results` over the lake views of
    `tables`: each view whose tables are all there (`gang_members` needs only `runs`)."""
    register_functions(con)
    present: set[str] = set()
    for sql, reads in zip(view_statements(percentile_columns()), _READS, strict=True):
        present |= reads
        if present <= set(tables):
            con.execute(sql)


class GangRow(NamedTuple):
    """One gang job's aggregate (`gang_comparison`); raw units, None where unknown."""

    backend: str
    gang_size: int
    profile: str
    job_name: str
    direction: str
    job_id: str
    start_skew_ms: float | None  # the largest member skew
    first_done_s: float | None
    first_done_bw_bytes: float | None
    first_done_iops: float | None
    last_done_s: float | None
    last_done_bw_bytes: float | None
    last_done_iops: float | None
    clat_p50_ns: int | None
    clat_p99_ns: int | None
    clat_p999_ns: int | None
    scaling: float | None  # first-done bandwidth over the smallest gang's


class MemberRow(NamedTuple):
    """One member run of a gang (`gang_member_rows`)."""

    job_id: str
    gang_attempt: int
    gang_slot: int
    runner: str
    host: str
    run_id: str
    status: str
    start_skew_ms: float | None
    clock_offset_ms: float | None
    clock_offset_error_ms: float | None


# Column names, in order (the rows are tuples too: `--format csv|json` emits them as they are).
COMPARISON_COLUMNS = GangRow._fields
MEMBER_COLUMNS = MemberRow._fields


def has_gangs(
    con: duckdb.DuckDBPyConnection, filt: RunFilter, *, compacted_gang_runs: int | None = None
) -> bool:
    """Whether the runs `filt` selects include gang members. `compacted_gang_runs`: the
    gang members the compacted tables hold (`Generation.gang_runs`; None: not known);
    at 0 only the runs not compacted are looked at (the footers of a year's `runs`
    files cost 0.12 s of a `compare` over MinIO, issue 44)."""
    where = filt.where("gang_members", any_role=True)
    source = "gang_members"
    if compacted_gang_runs == 0:
        source = f"(SELECT * FROM {UNCOMPACTED_RUNS} WHERE gang_size IS NOT NULL) gang_members"
    row = con.execute(f"SELECT count(*) > 0 FROM {source} WHERE {where}").fetchone()
    return row is not None and bool(row[0])


def gang_comparison(con: duckdb.DuckDBPyConnection, filt: RunFilter) -> list[GangRow]:
    """One row per gang job, by backend, gang size and job;
    `scaling` = first-done bandwidth over that of the smallest gang of the same backend,
    profile, job and direction (2.0 for 2 members that each got what one got alone)."""
    where = filt.where("m", any_role=True)
    cols = ", ".join(f"g.{c}" for c in COMPARISON_COLUMNS if c != "scaling")
    query = f"""
        WITH g AS (
          SELECT * FROM gang_results
          WHERE job_id IN (SELECT m.job_id FROM gang_members m WHERE {where})
        ), base AS (
          SELECT backend, profile, job_name, direction,
                 arg_min(first_done_bw_bytes, gang_size) AS bw
          FROM g GROUP BY ALL
        )
        SELECT {cols}, g.first_done_bw_bytes / nullif(base.bw, 0) AS scaling
        FROM g JOIN base USING (backend, profile, job_name, direction)
        ORDER BY g.profile, g.job_name, g.direction, g.backend, g.gang_size, g.job_id
    """
    return [GangRow(*row) for row in con.execute(query).fetchall()]


def gang_member_rows(con: duckdb.DuckDBPyConnection, filt: RunFilter) -> list[MemberRow]:
    """One row per member run of the gangs `filt` selects."""
    where = filt.where("m", any_role=True)
    query = (
        f"SELECT {', '.join(MEMBER_COLUMNS)} FROM gang_members m WHERE {where} "
        "ORDER BY job_id, gang_attempt, gang_slot"
    )
    return [MemberRow(*row) for row in con.execute(query).fetchall()]


def compacted_members(
    store: ObjectStore,
    prev: Generation | None,
    states: dict[str, DeltaState],
    appended: pa.Table | None,
) -> int:
    """Compacted runs that are gang members: the previous generation's count plus the
    runs rows this compaction appended; counted from the runs table's files where there
    is no count to add to (a lake compacted before it was kept, a record mended, runs
    an interrupted compaction appended)."""
    # compaction's: 40 ms of imports no question need pay (issue 44)
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    state = states.get("runs")
    if state is None:
        return 0
    before = prev.delta.get("runs") if prev is not None and not prev.legacy else None
    if before is not None and prev is not None and prev.gang_runs is not None and not prev.mended:
        runs = 0 if appended is None else len(pc.unique(appended.column("run_id")))
        if state.key_count == before.key_count + runs:
            sizes = None if appended is None else appended.column("gang_size")
            return prev.gang_runs + (0 if sizes is None else len(sizes) - sizes.null_count)
    total = 0
    for key in state.files:
        data, _ = store.get(key)
        sizes = pq.read_table(io.BytesIO(data), columns=["gang_size"]).column(0)
        total += len(sizes) - sizes.null_count
    return total
