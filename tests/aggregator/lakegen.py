"""Synthetic lakes for aggregator tests and the benchmark: the real key layout and schema.

Runs are written exactly as a runner writes them (one Parquet file per table per
run attempt under `fiolake.layout.result_key`, raw fio.json, then the commit marker),
with metric values chosen by the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from fiolake import layout
from fiolake.commits import Commit, log_commit
from fiolake.jobhash import effective_job_sha256
from fiolake.schema import RESULTS, parquet_bytes, to_table
from fiolake.store import LocalStore, ObjectStore
from fiolake.workload import workload_sha256

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)

# (job_name, direction) -> {metric: value}; missing metrics derive from iops.
Metrics = Mapping[tuple[str, str], Mapping[str, float]]


def run_row(
    run_id: str,
    job_id: str,
    campaign: str,
    backend: str,
    profile: str,
    started_at: datetime,
    status: str = "ok",
    **extra: Any,
) -> dict[str, Any]:
    """A `runs` row with a plausible environment; `extra` overrides any column."""
    row: dict[str, Any] = {
        "run_id": run_id,
        "job_id": job_id,
        "campaign_id": campaign,
        "repetition": 0,
        "backend": backend,
        "runner": "runner-1",
        "host": "host-a",
        "profile": profile,
        "job_file_sha256": "ab" * 32,
        "canonical_job_file": f"[global]\ndirectory=/mnt/{backend}\n[{profile}]\nrw=randread\n",
        "fio_version": "fio-3.33",
        "fio_argv": ["fio", "--output-format=json+"],
        "kernel": "6.1.0-18-amd64",
        "os": "Debian GNU/Linux 12",
        "cpu_model": "Xeon",
        "cpu_count": 2,
        "mem_bytes": 8 << 30,
        "target_dir": f"/mnt/{backend}",
        "fs_type": "ext4",
        "mount_options": "rw,relatime",
        "device": "/dev/nvme0n1",
        "device_model": "Samsung 980",
        "labels": [("rack", "r1")],
        "started_at": started_at,
        "finished_at": started_at + timedelta(seconds=60),
        "status": status,
        "error": None if status == "ok" else "fio exited 1",
        "exit_code": 0 if status == "ok" else 1,
    }
    row.update(extra)
    row.setdefault("effective_job_sha256", effective_job_sha256(row["canonical_job_file"]))
    row.setdefault("workload_sha256", workload_sha256(row["canonical_job_file"]))
    return row


def result_row(
    run_id: str,
    backend: str,
    job_name: str,
    direction: str,
    job_index: int,
    values: Mapping[str, float],
) -> dict[str, Any]:
    """A `results` row; bw_bytes, io_bytes and latencies follow from iops unless given."""
    iops = float(values.get("iops", 1000.0))
    lat = float(values.get("lat_mean_ns", 1e9 / max(iops, 1.0)))
    row: dict[str, Any] = {
        "run_id": run_id,
        "backend": backend,
        "job_name": job_name,
        "job_index": job_index,
        "groupid": 0,
        "direction": direction,
        "iops": iops,
        "bw_bytes": int(values.get("bw_bytes", iops * 4096)),
        "io_bytes": int(values.get("io_bytes", iops * 4096 * 60)),
        "total_ios": int(iops * 60),
        "runtime_ms": 60000,
        "lat_mean_ns": lat,
        "clat_mean_ns": float(values.get("clat_mean_ns", lat * 0.9)),
        "slat_mean_ns": lat * 0.1,
        "clat_p50_ns": int(values.get("clat_p50_ns", lat * 0.8)),
        "clat_p99_ns": int(values.get("clat_p99_ns", lat * 3)),
        "rw": "randrw",
        "bs": "4k",
        "iodepth": 1,
        "numjobs": 1,
        "ioengine": "psync",
        "direct": False,
        "job_error": 0,
    }
    for name, value in values.items():  # explicit values win, in the column's type
        kind = RESULTS.field(name).type
        if pa.types.is_boolean(kind) or value is None:
            row[name] = value
        else:
            row[name] = int(value) if pa.types.is_integer(kind) else float(value)
    return row


def timeseries_rows(
    run_id: str,
    job_name: str,
    direction: str,
    job_index: int,
    values: Mapping[str, float],
    seconds: int,
) -> list[dict[str, Any]]:
    """Per-second rows around the run's iops."""
    iops = float(values.get("iops", 1000.0))
    return [
        {
            "run_id": run_id,
            "job_name": job_name,
            "job_index": job_index,
            "thread": job_index + 1,
            "direction": direction,
            "second": s,
            "iops": int(iops * (0.95 + 0.1 * (s % 3) / 2)),
            "bw_bytes": int(iops * 4096),
            "lat_mean_ns": int(1e9 / max(iops, 1.0)),
            "zero_filled": False,
            "partial": s == seconds,
        }
        for s in range(1, seconds + 1)
    ]


def percentile_rows(
    run_id: str, job_name: str, direction: str, job_index: int, values: Mapping[str, float]
) -> list[dict[str, Any]]:
    """A few clat percentiles."""
    lat = 1e9 / max(float(values.get("iops", 1000.0)), 1.0)
    return [
        {
            "run_id": run_id,
            "job_name": job_name,
            "job_index": job_index,
            "direction": direction,
            "lat_type": "clat",
            "percentile": p,
            "value_ns": int(lat * (1 + p / 50)),
            "source": "fio_json",
        }
        for p in (50.0, 99.0)
    ]


def write_run(
    store: ObjectStore,
    *,
    run_id: str,
    job_id: str,
    campaign: str = "c1",
    backend: str = "nvme",
    profile: str = "random-reads",
    metrics: Metrics | None = None,
    started_at: datetime = T0,
    status: str = "ok",
    commit: bool = True,
    seconds: int = 3,
    raw: bool = True,
    committed_at: datetime | None = None,
    log: bool = True,
    **run_extra: Any,
) -> str:
    """Write one run attempt (4 tables, raw fio.json, commit marker unless `commit=False`,
    then its commit-log entry unless `log=False`, as runners older than the log did)."""
    metrics = metrics if metrics is not None else {("job1", "read"): {"iops": 1000.0}}
    runs = [run_row(run_id, job_id, campaign, backend, profile, started_at, status, **run_extra)]
    results, ts, pct = [], [], []
    if status == "ok":
        for index, ((job, direction), values) in enumerate(sorted(metrics.items())):
            results.append(result_row(run_id, backend, job, direction, index, values))
            ts += timeseries_rows(run_id, job, direction, index, values, seconds)
            pct += percentile_rows(run_id, job, direction, index, values)
    tables = {"runs": runs, "results": results, "timeseries": ts, "percentiles": pct}
    for name, rows in tables.items():
        store.put(layout.result_key(name, started_at, run_id), parquet_bytes(to_table(name, rows)))
    if raw and status != "rejected":
        store.put(layout.raw_key(run_id, "fio.json"), json.dumps({"jobs": []}).encode())
    if commit:
        when = (committed_at or started_at).isoformat()
        marker = Commit(job_id, run_id, campaign, "runner-1", status, when)
        store.put(layout.commit_key(job_id), marker.to_bytes(), if_none_match=True)
        if log:
            log_commit(store, marker)
    return run_id


def write_campaign(
    store: ObjectStore,
    campaign: str,
    backends: Mapping[str, Metrics],
    repetitions: int,
    *,
    profile: str = "random-reads",
    start: datetime = T0,
    jitter: float = 0.0,
    **run_extra: Any,
) -> list[str]:
    """`repetitions` runs per backend; `jitter` spreads values ±jitter (fraction), deterministic;
    `run_extra` overrides `runs` columns of every run (e.g. kernel=...)."""
    run_ids = []
    step = 0
    # Other profiles of the same campaign get ids of their own (the default keeps old ids).
    tag = "" if profile == "random-reads" else f"-{profile}"
    for backend, metrics in backends.items():
        for rep in range(repetitions):
            factor = 1.0 + jitter * ((rep % 5) - 2) / 2 if repetitions > 1 else 1.0
            scaled = {k: {m: v * factor for m, v in vals.items()} for k, vals in metrics.items()}
            run_id = f"{campaign}-{backend}{tag}-r{rep}"
            write_run(
                store,
                run_id=run_id,
                job_id=f"{campaign}-{backend}{tag}-j{rep}",
                campaign=campaign,
                backend=backend,
                profile=profile,
                metrics=scaled,
                started_at=start + timedelta(minutes=step),
                repetition=rep,
                **run_extra,
            )
            run_ids.append(run_id)
            step += 1
    return run_ids


class ListingStore(LocalStore):
    """A local store that records every prefix it is asked to list."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.listed: list[str] = []

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[str]:
        self.listed.append(prefix)
        return super().list(prefix, start_after=start_after)


def local_store(path: Any) -> LocalStore:
    """A LocalStore on `path` (created)."""
    return LocalStore(path)


def counted_cursors(lake: Any) -> list[str]:
    """A list that gains an entry for each cursor `lake` opens from now on (one a query)."""
    opened: list[str] = []
    cursor = lake.cursor

    def counting_cursor():  # type: ignore[no-untyped-def]
        opened.append("cursor")
        return cursor()

    lake.cursor = counting_cursor
    return opened
