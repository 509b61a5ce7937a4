"""Lake consistency: every committed run has its rows and its raw fio output."""

from __future__ import annotations

from dataclasses import dataclass

from fiolake import layout
from fiolake.aggregator.lake.lake import Lake


@dataclass(frozen=True)
class Problem:
    """Something missing or inconsistent for one committed run."""

    job_id: str
    run_id: str
    status: str
    problem: str


# status='ok' runs must have results rows; per-second rows when a job moved data for longer
# than fio's log slack; percentiles when fio measured a latency (not so with gtod_reduce=1 or
# disable_lat/clat/slat). failed/rejected runs may have none.
_SQL = """
    WITH r AS (SELECT run_id, count(*) AS n, any_value(status) AS status FROM runs GROUP BY 1),
         x AS (SELECT run_id, count(*) AS n,
                      count(*) FILTER (io_bytes > 0 AND runtime_ms > 10) AS moved,
                      count(*) FILTER (coalesce(clat_mean_ns, lat_mean_ns, slat_mean_ns)
                                       IS NOT NULL) AS timed
               FROM results GROUP BY 1),
         t AS (SELECT run_id, count(*) AS n FROM timeseries GROUP BY 1),
         p AS (SELECT run_id, count(*) AS n FROM percentiles GROUP BY 1)
    SELECT c.job_id, c.run_id, c.status, coalesce(r.n, 0), r.status,
           coalesce(x.n, 0), coalesce(t.n, 0), coalesce(p.n, 0),
           coalesce(x.moved, 0), coalesce(x.timed, 0)
    FROM commits c
    LEFT JOIN r USING (run_id) LEFT JOIN x USING (run_id)
    LEFT JOIN t USING (run_id) LEFT JOIN p USING (run_id)
    ORDER BY c.job_id
"""


def check_lake(lake: Lake) -> list[Problem]:
    """Problems found (empty when the lake is consistent). LakeError when the newest
    compaction generation lacks its covered-ids object, which queries may not need
    (`coveredids.LazyIds`) but the next compaction does (it then mends it)."""
    if lake.compacted is not None:
        for state in lake.compacted.delta.values():
            state.key_array  # noqa: B018 - read now: raises if they are gone
    cur = lake.cursor()
    try:
        rows = cur.execute(_SQL).fetchall()
    finally:
        cur.close()
    raw = set(lake.store.list(layout.RAW_PREFIX))
    problems = []
    for job_id, run_id, status, runs, run_status, results, ts, pct, moved, timed in rows:
        found = []
        if runs == 0:
            found.append("no runs row")
        elif runs > 1:
            found.append(f"{runs} runs rows (expected 1)")
        elif run_status != status:
            found.append(f"commit says status {status!r} but the runs row says {run_status!r}")
        if status == "ok":
            if results == 0:
                found.append("no results rows")
            if ts == 0 and moved:
                found.append(f"no timeseries rows though {moved} results row(s) moved data")
            if pct == 0 and timed:
                found.append(f"no percentiles rows though {timed} results row(s) have latencies")
            if layout.raw_key(run_id, "fio.json") not in raw:
                found.append(f"{layout.raw_key(run_id, 'fio.json')} is missing")
        problems += [Problem(job_id, run_id, status, p) for p in found]
    return problems
