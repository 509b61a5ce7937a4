"""The rest of fio's json+ report → the lake tables `disk_util`, `iodepth`, `latency_bins`.

disk_util is per run (fio samples /proc/diskstats for the devices under the job's files),
the I/O depth distribution per jobs[] entry (iodepth_level / _submit / _complete, percent),
and fio's json+ latency buckets exactly as fio reported them (midpoint ns → count).
"""

from __future__ import annotations

from fiolake.runner.report.document import DIRECTIONS, LAT_TYPES, FioReport, lat_stats

_DEPTH_KINDS = {
    "iodepth_level": "level",
    "iodepth_submit": "submit",
    "iodepth_complete": "complete",
}


def disk_util_rows(report: FioReport, *, run_id: str) -> list[dict]:
    """One row per device in fio's disk_util[] (aggregated dm/md devices name their parent)."""
    rows = []
    for disk in report.raw.get("disk_util") or []:
        rows.append(_disk_row(run_id, disk, None))
        for slave in disk.get("slaves") or []:
            rows.append(_disk_row(run_id, slave, disk.get("name")))
    return rows


def _disk_row(run_id: str, disk: dict, parent: str | None) -> dict:
    def get(*names: str) -> object:
        for name in names:  # an aggregated device prefixes its counters with aggr_
            if name in disk:
                return disk[name]
        return None

    return {
        "run_id": run_id,
        "device": disk.get("name"),
        "read_ios": get("read_ios", "aggr_read_ios"),
        "write_ios": get("write_ios", "aggr_write_ios"),
        "read_merges": get("read_merges", "aggr_read_merges", "aggr_read_merge"),
        "write_merges": get("write_merges", "aggr_write_merges", "aggr_write_merge"),
        "read_ticks_ms": get("read_ticks", "aggr_read_ticks"),
        "write_ticks_ms": get("write_ticks", "aggr_write_ticks"),
        "in_queue_ms": get("in_queue", "aggr_in_queue"),
        "util": get("util", "aggr_util"),
        "slave_of": parent,
    }


def iodepth_rows(report: FioReport, *, run_id: str) -> list[dict]:
    """fio's I/O depth distributions, one row per entry × kind × bucket."""
    rows = []
    for index, job in enumerate(report.jobs):
        for key, kind in _DEPTH_KINDS.items():
            for depth, percent in (job.get(key) or {}).items():
                rows.append(
                    {"run_id": run_id, "job_name": job.get("jobname"), "job_index": index,
                     "kind": kind, "depth": str(depth), "percent": float(percent)}
                )  # fmt: skip
    return rows


def latency_bin_rows(report: FioReport, *, run_id: str) -> list[dict]:
    """fio's json+ latency buckets (non-empty only, as fio wrote them)."""
    rows = []
    for index, job in enumerate(report.jobs):
        for direction in (*DIRECTIONS, "mixed"):
            section = job.get(direction)
            if not isinstance(section, dict):
                continue
            for lat_type in LAT_TYPES:
                stats = section.get(f"{lat_type}_ns")
                if not isinstance(stats, dict) or lat_stats(section, lat_type) is None:
                    continue
                for value, count in sorted(
                    (int(v), int(c)) for v, c in (stats.get("bins") or {}).items()
                ):
                    rows.append(
                        {"run_id": run_id, "job_name": job.get("jobname"), "job_index": index,
                         "direction": direction, "lat_type": lat_type, "value_ns": value,
                         "count": count}
                    )  # fmt: skip
    return rows


def fio_steady_states(report: FioReport) -> dict[str, tuple[bool, int | None]]:
    """fio's own steady-state verdicts (jobs run with `steadystate=`): job name ->
    (attained, warm-up seconds).

    fio ends a steadystate job as soon as its last `steadystate_duration` seconds meet the
    criterion, so an attained job warmed up for its runtime minus that window; a job that
    never attained it has no warm-up. A job is steady when all its threads attained it.
    """
    seen: dict[str, list[int | None]] = {}
    for job in report.jobs:
        ss = job.get("steadystate")
        if not isinstance(ss, dict) or "attained" not in ss:
            continue
        warmup = None
        if ss.get("attained") and job.get("job_runtime") is not None and ss.get("duration"):
            warmup = max(0, round(int(job["job_runtime"]) / 1000 - int(ss["duration"])))
        seen.setdefault(str(job.get("jobname")), []).append(warmup)
    return {
        name: (True, max(w for w in warmups if w is not None))
        if all(w is not None for w in warmups)
        else (False, None)
        for name, warmups in seen.items()
    }
