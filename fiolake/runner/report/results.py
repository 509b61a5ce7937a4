"""fio's JSON / json+ report → rows of the lake tables `results` and `percentiles`.

Parsing and the shared helpers live in runner.report.document (re-exported here); fio's bin
arithmetic in fiolake.fio_bins. Values stay in raw units; a statistic fio did not measure
is null, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fiolake.fio_bins import bin_percentiles
from fiolake.runner.report.document import (
    DIRECTIONS,
    LAT_TYPES,
    STANDARD_PERCENTILES,
    FioReport,
    did_io,
    implied_directions,
    io_directions,
    is_grouped,
    job_errors,
    json_option,
    lat_stats,
    parse_fio_json,
    truthy,
    version_tuple,
)
from fiolake.runner.report.threads import Section, fio_threads
from fiolake.schema import RESULT_PERCENTILES

# What fio uses for an option the job file leaves unset (`fio --cmdhelp=<option>`, 3.33).
FIO_DEFAULTS = {
    "rw": "read",
    "bs": "4k",
    "iodepth": "1",
    "numjobs": "1",
    "ioengine": "psync",
    "direct": "0",
}

__all__ = [
    "DIRECTIONS",
    "LAT_TYPES",
    "STANDARD_PERCENTILES",
    "FioReport",
    "bin_percentiles",
    "did_io",
    "implied_directions",
    "io_directions",
    "is_grouped",
    "job_errors",
    "json_option",
    "lat_stats",
    "parse_fio_json",
    "percentile_rows",
    "result_rows",
    "truthy",
    "version_tuple",
]


# ---- results -----------------------------------------------------------------------


def result_rows(
    report: FioReport,
    *,
    run_id: str,
    backend: str,
    job_options: Callable[[str], Mapping[str, str]],
    sections: Sequence[Section] | None = None,
) -> list[dict]:
    """One `results` row per jobs[] entry × direction that did I/O (every implied
    direction when the entry did none, so a failed job stays visible).

    `sections` (the job file fio ran) gives each direction of an entry that folds several
    sections (group_reporting) the rw= of the sections that do that direction.
    """
    folded: dict[int, list[Mapping[str, str]]] = {}
    for thread in fio_threads(report, sections) if sections else []:
        if thread.entry is not None and thread.options not in folded.get(thread.entry, []):
            folded.setdefault(thread.entry, []).append(thread.options)
    rows = []
    for index, job in enumerate(report.jobs):
        name = str(job.get("jobname"))
        options = _options(report, job, job_options(name) or {})
        limit_ns = _wall_ns(job)
        for direction, section in _result_sections(job, options["rw"]):
            rw = _rw_for(folded.get(index, []), direction) or options["rw"]
            row = {
                "run_id": run_id,
                "backend": backend,
                "job_name": name,
                "job_index": index,
                "groupid": job.get("groupid"),
                "direction": direction,
                **_direction_stats(section, limit_ns),
                **_clat_columns(report, job, section, limit_ns),
                "job_runtime_ms": job.get("job_runtime"),
                "usr_cpu": job.get("usr_cpu"),
                "sys_cpu": job.get("sys_cpu"),
                "ctx": job.get("ctx"),
                "majf": job.get("majf"),
                "minf": job.get("minf"),
                "job_error": int(job.get("error") or 0),
                **options,
                "rw": rw,
            }
            rows.append(row)
    return rows


def _rw_for(members: list[Mapping[str, str]], direction: str) -> str | None:
    """The rw= of the folded sections that do `direction` (distinct, comma-joined)."""
    if len(members) < 2:
        return None
    found: list[str] = []
    for options in members:
        rw = options.get("rw") or options.get("readwrite") or FIO_DEFAULTS["rw"]
        if direction in implied_directions(rw) and rw not in found:
            found.append(rw)
    return ",".join(found) or None


def _wall_ns(job: Mapping[str, Any]) -> float | None:
    # No latency can exceed the job's wall time: a larger value is one of fio's sentinels
    # (e.g. a clat mean of 8.8e12 ns in a failed run).
    elapsed = job.get("elapsed")
    return (float(elapsed) + 1) * 1e9 if isinstance(elapsed, int | float) and elapsed > 0 else None


def _result_sections(job: Mapping[str, Any], rw: str | None) -> list[tuple[str, dict]]:
    present = [d for d in DIRECTIONS if d in job]
    if not present and "mixed" in job:  # unified_rw_reporting=1: fio reports only 'mixed'
        return [("mixed", job["mixed"])]
    busy = [(d, job[d]) for d in present if did_io(job[d])]
    if busy:
        return busy
    # No I/O at all (a failed job): still show the directions it was asked to do.
    return [(d, job.get(d) or {}) for d in implied_directions(rw)]


def _options(
    report: FioReport, job: Mapping[str, Any], canonical: Mapping[str, str]
) -> dict[str, Any]:
    def get(*names: str) -> str | None:
        for name in names:
            if name in canonical:
                return str(canonical[name])
        return json_option(report, job, *names)

    direct = get("direct")
    if direct is None and get("buffered") is not None:
        direct = "0" if truthy(get("buffered")) else "1"
    # An option the job file does not set has fio's default (docs/fio-output.md §1).
    return {
        "rw": get("rw", "readwrite") or FIO_DEFAULTS["rw"],
        "bs": get("bs", "blocksize") or FIO_DEFAULTS["bs"],
        "iodepth": _int_or_none(get("iodepth") or FIO_DEFAULTS["iodepth"]),
        "numjobs": _int_or_none(get("numjobs") or FIO_DEFAULTS["numjobs"]),
        "ioengine": get("ioengine") or FIO_DEFAULTS["ioengine"],
        "direct": truthy(direct or FIO_DEFAULTS["direct"]),
        "group_reporting": truthy(get("group_reporting")),
    }


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _direction_stats(section: Mapping[str, Any], limit_ns: float | None) -> dict[str, Any]:
    bw_bytes = section.get("bw_bytes")
    if bw_bytes is None and section.get("bw") is not None:  # fio < 3.2: KiB/s only
        bw_bytes = int(section["bw"]) * 1024
    io_bytes = section.get("io_bytes")
    if io_bytes is None and section.get("io_kbytes") is not None:
        io_bytes = int(section["io_kbytes"]) * 1024
    row: dict[str, Any] = {
        "io_bytes": io_bytes,
        "total_ios": section.get("total_ios"),
        "bw_bytes": bw_bytes,
        "iops": section.get("iops"),
        "runtime_ms": section.get("runtime"),
    }
    for kind in LAT_TYPES:
        stats = lat_stats(section, kind)
        if (
            stats
            and limit_ns
            and any(float(stats.get(k) or 0) > limit_ns for k in ("min", "max", "mean"))
        ):
            stats = None
        row[f"{kind}_min_ns"] = stats and stats.get("min")
        row[f"{kind}_max_ns"] = stats and stats.get("max")
        row[f"{kind}_mean_ns"] = stats and stats.get("mean")
        row[f"{kind}_stddev_ns"] = stats and stats.get("stddev")
    # Window statistics exist only if fio closed at least one window (bw_samples > 0).
    bw_ok = int(section.get("bw_samples", 1) or 0) > 0
    iops_ok = int(section.get("iops_samples", 1) or 0) > 0
    row.update(
        bw_min_bytes=_kib(section.get("bw_min")) if bw_ok else None,
        bw_max_bytes=_kib(section.get("bw_max")) if bw_ok else None,
        bw_mean_bytes=_kib(section.get("bw_mean")) if bw_ok else None,
        bw_stddev_bytes=_kib(section.get("bw_dev")) if bw_ok else None,
        iops_min=_float(section.get("iops_min")) if iops_ok else None,
        iops_max=_float(section.get("iops_max")) if iops_ok else None,
        iops_mean=_float(section.get("iops_mean")) if iops_ok else None,
        iops_stddev=_float(section.get("iops_stddev")) if iops_ok else None,
    )
    return row


def _kib(value: Any) -> Any:
    if value is None:
        return None
    return value * 1024 if isinstance(value, int) else float(value) * 1024


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _clat_columns(
    report: FioReport, job: Mapping[str, Any], section: Mapping[str, Any], limit_ns: float | None
) -> dict[str, int | None]:
    """fio's clat percentiles; any standard one missing from fio's percentile_list is
    recomputed from the json+ bins."""
    points = {(lat_type, p): v for lat_type, p, v in _json_percentiles(report, job, section)}
    wanted = [p for p in RESULT_PERCENTILES.values() if ("clat", p) not in points]
    from_bins = {}
    bins = _typed_blocks(report, job, section, "bins").get("clat")
    if wanted and bins:
        from_bins = dict(zip(wanted, bin_percentiles(bins, wanted), strict=True))
    out = {}
    for column, p in RESULT_PERCENTILES.items():
        value = points.get(("clat", p), from_bins.get(p))
        out[column] = None if value is None or (limit_ns and value > limit_ns) else value
    return out


# ---- percentiles -------------------------------------------------------------------


def percentile_rows(report: FioReport, *, run_id: str) -> list[dict]:
    """Every percentile fio reported (fio_json) plus those recomputed from json+ bins."""
    rows = []
    for index, job in enumerate(report.jobs):
        for direction, section in _percentile_sections(job):
            base = {
                "run_id": run_id,
                "job_name": job.get("jobname"),
                "job_index": index,
                "direction": direction,
            }
            for lat_type, p, value in _json_percentiles(report, job, section):
                rows.append(
                    {**base, "lat_type": lat_type, "percentile": p, "value_ns": value,
                     "source": "fio_json"}
                )  # fmt: skip
            for lat_type, bins in _typed_blocks(report, job, section, "bins").items():
                values = bin_percentiles(bins, STANDARD_PERCENTILES)
                for p, value in zip(STANDARD_PERCENTILES, values, strict=True):
                    rows.append(
                        {**base, "lat_type": lat_type, "percentile": p, "value_ns": value,
                         "source": "json_plus_bins"}
                    )  # fmt: skip
    return rows


def _percentile_sections(job: Mapping[str, Any]) -> list[tuple[str, dict]]:
    names = [d for d in DIRECTIONS if d in job] or (["mixed"] if "mixed" in job else [])
    return [(d, job[d]) for d in names if isinstance(job[d], dict)]


def _typed_blocks(
    report: FioReport, job: Mapping[str, Any], section: Mapping[str, Any], key: str
) -> dict[str, dict]:
    """{lat_type: section[<type>_ns][key]} for 'percentile' or 'bins', with old-fio relabelling."""
    blocks = {}
    for kind in LAT_TYPES:
        stats = section.get(f"{kind}_ns")
        if isinstance(stats, dict) and stats.get(key) and lat_stats(section, kind) is not None:
            blocks[kind] = stats[key]
    # Before per-type percentiles, fio put *total* latency percentiles under clat_ns when
    # lat_percentiles=1 (docs/fio-output.md §1). Tell them apart by where they sit.
    if (
        set(blocks) == {"clat"}
        and truthy(json_option(report, job, "lat_percentiles"))
        and not (section.get("lat_ns") or {}).get(key)
    ):
        blocks = {"lat": blocks["clat"]}
    return blocks


def _json_percentiles(
    report: FioReport, job: Mapping[str, Any], section: Mapping[str, Any]
) -> list[tuple[str, float, int]]:
    out = []
    for lat_type, block in _typed_blocks(report, job, section, "percentile").items():
        for key, value in block.items():
            p = float(key)
            if p > 0:  # fio <= 3.3 pads the list with duplicate "0.00": 0 entries
                out.append((lat_type, p, int(value)))
    return sorted(out)
