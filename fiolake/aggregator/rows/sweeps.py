"""Load sweeps: profiles whose sections step one load knob, and each run's point on them.

A sweep is recognised from what differs between a job file's sections, read from the
canonical job file every run stores (`runs.canonical_job_file`, through
`fiolake.jobhash.job_options`), so lakes written before this existed are recognised too
and no column had to be added: the knob is the first of LOAD_KNOBS whose value (the
section's own, else `[global]`'s, else fio's default) is different in every section.
`iodepth-sweep` steps iodepth, `latency-at-load` steps rate_iops; `bs-sweep` is not a
load sweep (its sections also change engine and caching, and each block size repeats).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime

from fiolake.aggregator.lake.lake import Lake
from fiolake.aggregator.rows.filters import RunFilter, validate
from fiolake.aggregator.rows.series import fetch_rows
from fiolake.jobhash import effective_job_text, job_options
from fiolake.units import size_or_none
from fiolake.workload import workload_sha256

# In the order a knob is preferred when several step at once.
LOAD_KNOBS = ("rate_iops", "iodepth", "numjobs", "bs")
# fio's value of a knob a job file leaves unset (None: unlimited, so no load value).
KNOB_DEFAULTS = {"rate_iops": None, "iodepth": "1", "numjobs": "1", "bs": "4k"}
_DIRECTION_INDEX = {"read": 0, "write": 1, "trim": 2}  # fio's per-direction lists


@dataclass(frozen=True)
class Sweep:
    """What a sweep profile steps: the knob and each section's value of it (fio's text)."""

    knob: str
    values: dict[str, str]  # section (= fio job name) -> value


@dataclass(frozen=True)
class LoadPoint:
    """One run's job × direction of a sweep: the load it was offered and what it did."""

    run_id: str
    backend: str
    campaign_id: str | None
    profile: str
    started_at: datetime
    job_name: str
    direction: str
    knob: str
    load: float  # the knob's value for this direction (bytes for bs)
    iops: float
    bw_bytes: float
    clat_p50_ns: float | None
    clat_p99_ns: float | None
    clat_p999_ns: float | None
    workload_sha256: str | None = None  # runs pool only within one workload (fiolake.workload)


def knob_value(knob: str, text: str, direction: str) -> float | None:
    """The number a knob's value stands for in `direction`: fio's per-direction lists
    (`rate_iops=1000,500`, `bs=4k,64k`) give reads the first value, writes the second
    (a single value applies to every direction); block sizes in bytes."""
    parts = [p.strip() for p in text.split(",")]
    index = _DIRECTION_INDEX.get(direction, 0)
    part = parts[index] if index < len(parts) and parts[index] else parts[0]
    number = size_or_none(part)
    return float(number) if number is not None and number > 0 else None


@functools.lru_cache(maxsize=256)
def sweep_of(canonical: str | None) -> Sweep | None:
    """The load sweep a canonical job file is, or None: two or more sections and a knob
    of LOAD_KNOBS whose effective value differs in every one of them."""
    if not canonical:
        return None
    options = job_options(canonical)
    sections = [
        line[1:-1]
        for line in effective_job_text(canonical).splitlines()
        if line.startswith("[") and line.endswith("]") and line != "[global]"
    ]
    if len(sections) < 2:
        return None
    for knob in LOAD_KNOBS:
        default = options.get(f"[global] {knob}", KNOB_DEFAULTS[knob])
        values = {s: options.get(f"[{s}] {knob}", default) for s in sections}
        if None in values.values():
            continue
        if len(set(values.values())) == len(sections):
            return Sweep(knob, {s: str(v) for s, v in values.items()})
    return None


def load_sweep_profiles(lake: Lake) -> list[str]:
    """Profiles with successful runs whose job file is a load sweep (`sweep_of`)."""
    rows = fetch_rows(
        lake,
        """SELECT profile, canonical_job_file FROM runs
           WHERE status = 'ok' AND profile IS NOT NULL AND canonical_job_file IS NOT NULL
           GROUP BY ALL""",
    )
    return sorted({p for p, text in rows if sweep_of(text) is not None})


def load_points(lake: Lake, filt: RunFilter) -> list[LoadPoint]:
    """Per run × job × direction of the selected runs of load-sweep profiles: the load
    offered (from the job file) and the run's IOPS and bandwidth (threads summed) and clat
    p50/p99/p99.9 (threads averaged, as `columns.per_run_aggregate`), oldest run first."""
    validate(lake, filt)
    sql = f"""
        SELECT x.run_id, r.backend, r.campaign_id, r.profile, r.started_at, x.job_name,
               x.direction, any_value(r.canonical_job_file), sum(x.iops), sum(x.bw_bytes),
               avg(x.clat_p50_ns), avg(x.clat_p99_ns), avg(x.clat_p999_ns),
               any_value(r.workload_sha256)
        FROM results x JOIN runs r USING (run_id)
        WHERE {filt.where("r")} AND r.canonical_job_file IS NOT NULL
        GROUP BY ALL ORDER BY r.started_at, x.run_id, min(x.job_index), x.direction
    """
    points = []
    for run_id, backend, campaign, profile, at, job, direction, text, *numbers in fetch_rows(
        lake, sql
    ):
        sweep = sweep_of(text)
        if sweep is None or job not in sweep.values:
            continue
        load = knob_value(sweep.knob, sweep.values[job], direction)
        if load is None:
            continue
        iops, bw, p50, p99, p999, sha = numbers
        measured = (float(iops or 0), float(bw or 0), p50, p99, p999)
        where = (run_id, backend, campaign, profile, at, job, direction, sweep.knob, load)
        points.append(LoadPoint(*where, *measured, sha or workload_sha256(text)))
    return points
