"""Latency distributions per backend: percentile curves, json+ bins, and latency against
IOPS across a sweep profile's jobs (fio-plot's core chart). Aggregated in SQL: a page
draws tens of points per backend, never one per run."""

from __future__ import annotations

from dataclasses import dataclass

from fiolake.aggregator.lake.lake import Lake
from fiolake.aggregator.rows.filters import RunFilter, validate
from fiolake.aggregator.rows.series import fetch_rows
from fiolake.aggregator.rows.sweeps import load_sweep_profiles

LAT_TYPES = ("clat", "lat", "slat")
# fio's histogram: 64 log-linear buckets per power of two (runner/fio_bins.py), so a
# binned value is known to within one bucket: 1/64 of its power of two.
BUCKETS_PER_OCTAVE = 64


@dataclass(frozen=True)
class PercentilePoint:
    """The median over runs of one percentile of one backend's job × direction."""

    backend: str
    job_name: str
    direction: str
    percentile: float
    value_ns: float
    runs: int


@dataclass(frozen=True)
class Bin:
    """One json+ bucket, counts summed over a backend's runs."""

    backend: str
    job_name: str
    direction: str
    value_ns: int
    count: int


@dataclass(frozen=True)
class SweepPoint:
    """One job of a sweep profile on one backend: mean over runs of IOPS and latency."""

    backend: str
    job_name: str
    direction: str
    iodepth: int | None
    bs: str | None
    iops: float
    clat_mean_ns: float | None
    clat_p99_ns: float | None
    runs: int


def _scope(lake: Lake, filt: RunFilter) -> str:
    validate(lake, filt)
    return filt.where("r")


def percentile_curves(lake: Lake, filt: RunFilter, lat_type: str = "clat") -> list[PercentilePoint]:
    """fio's percentiles (p1 … p99.99) per backend × job × direction, median over runs."""
    where = _scope(lake, filt)
    sql = f"""
        SELECT r.backend, p.job_name, p.direction, p.percentile,
               median(p.value_ns), count(DISTINCT p.run_id)
        FROM percentiles p JOIN runs r USING (run_id)
        WHERE {where} AND p.lat_type = ? AND p.source = 'fio_json' AND p.value_ns > 0
        GROUP BY ALL ORDER BY ALL
    """
    return [PercentilePoint(*row) for row in fetch_rows(lake, sql, [lat_type])]


def bins(lake: Lake, filt: RunFilter, lat_type: str = "clat") -> list[Bin]:
    """fio's json+ latency buckets per backend × job × direction (counts over runs)."""
    where = _scope(lake, filt)
    sql = f"""
        SELECT r.backend, b.job_name, b.direction, b.value_ns, sum(b.count)::BIGINT
        FROM latency_bins b JOIN runs r USING (run_id)
        WHERE {where} AND b.lat_type = ?
        GROUP BY ALL ORDER BY ALL
    """
    return [Bin(*row) for row in fetch_rows(lake, sql, [lat_type])]


def sweep(lake: Lake, filt: RunFilter) -> list[SweepPoint]:
    """Per backend × job × direction: mean IOPS and latency over runs, with the job's
    iodepth and block size, ordered as the sweep runs (iodepth, then the job file's
    order: a rate_iops sweep's loads at one iodepth)."""
    where = _scope(lake, filt)
    sql = f"""
        WITH per_run AS (
            SELECT r.backend, x.job_name, x.direction, x.run_id,
                   max(x.iodepth) AS iodepth, max(x.bs) AS bs, sum(x.iops) AS iops,
                   min(x.job_index) AS job_index,
                   avg(x.clat_mean_ns) AS clat_mean, avg(x.clat_p99_ns) AS clat_p99
            FROM results x JOIN runs r USING (run_id)
            WHERE {where}
            GROUP BY ALL
        )
        SELECT backend, job_name, direction, max(iodepth), max(bs), avg(iops),
               avg(clat_mean), avg(clat_p99), count(*)
        FROM per_run GROUP BY ALL
        ORDER BY backend, direction, max(iodepth), min(job_index), job_name
    """
    return [SweepPoint(*row) for row in fetch_rows(lake, sql)]


def sweep_profiles(lake: Lake) -> list[str]:
    """Profiles whose jobs differ in iodepth or block size, and the load sweeps whose
    sections step rate_iops or numjobs (`sweeps.sweep_of`).

    Runs of one workload (`fiolake.workload`) ran the same jobs, so one run a workload
    tells them all: at 1,000,000 runs reading every result row took 0.8 s of the Latency
    page's first visit. Runs without a workload hash (no job text) are all read."""
    sql = """
        WITH ok AS (SELECT run_id, profile, workload_sha256, started_at FROM runs
                    WHERE status = 'ok'),
        one AS (
            SELECT profile, arg_max(run_id, started_at) AS run_id FROM ok
            WHERE workload_sha256 IS NOT NULL GROUP BY profile, workload_sha256
            UNION ALL
            SELECT profile, run_id FROM ok WHERE workload_sha256 IS NULL
        )
        SELECT one.profile FROM results x JOIN one USING (run_id)
        GROUP BY one.profile
        HAVING count(DISTINCT x.job_name) > 1
           AND (count(DISTINCT x.iodepth) > 1 OR count(DISTINCT x.bs) > 1)
        ORDER BY 1
    """
    return sorted({p for (p,) in fetch_rows(lake, sql)} | set(load_sweep_profiles(lake)))


def profiles_by_runs(lake: Lake) -> list[str]:
    """Profiles with successful runs, the most-run first (ties: by name)."""
    sql = """SELECT profile FROM runs WHERE status = 'ok' AND profile IS NOT NULL
             GROUP BY profile ORDER BY count(*) DESC, profile"""
    return [p for (p,) in fetch_rows(lake, sql)]


def campaigns_of(lake: Lake, profile: str) -> list[str]:
    """Campaigns with successful runs of `profile`, the newest first (by their last start).

    The Latency page shows the newest by default, as the Home page does: the exact
    median over every run of a profile reads all its percentile rows (at 100,000 runs,
    5.4 M rows and ~16 s for one chart), and one campaign is what is usually asked."""
    sql = """SELECT campaign_id FROM runs
             WHERE status = 'ok' AND profile = ? AND campaign_id IS NOT NULL
             GROUP BY campaign_id ORDER BY max(started_at) DESC, campaign_id"""
    return [c for (c,) in fetch_rows(lake, sql, [profile])]


def jobs_of(lake: Lake, profile: str) -> list[str]:
    """The fio job names of a profile's successful runs, in the job file's order."""
    sql = """SELECT x.job_name FROM results x JOIN runs r USING (run_id)
             WHERE r.status = 'ok' AND r.profile = ?
             GROUP BY x.job_name ORDER BY min(x.job_index), x.job_name"""
    return [j for (j,) in fetch_rows(lake, sql, [profile])]
