"""fio's JSON / json+ report → rows of the lake tables `results` and `percentiles`.

fio's output format (see docs/fio-output.md): fio may print error lines before the
JSON, several cumulative documents (status-interval), and older versions (3.1) lack
`N`, `bw_bytes`, `job_runtime` and keep percentiles under `clat_ns` only. Values stay in
raw units; a statistic fio did not measure is null, never 0.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from fiolake.errors import FioError
from fiolake.schema import RESULT_PERCENTILES

DIRECTIONS = ("read", "write", "trim")
LAT_TYPES = ("slat", "clat", "lat")
# fio's default percentile_list: what json+ bins are recomputed for.
STANDARD_PERCENTILES = (
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0,
    90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
)  # fmt: skip
# fio's own error lines (td_verror, io_u errors, refused files); plain warnings such as
# "fio: this platform does not support process shared mutexes" must not fail a run.
_FIO_ERROR_LINE = re.compile(
    r"^fio:.*(err=|error|failed|disallowed|denied|cannot|can't|unable|invalid|no such)",
    re.IGNORECASE,
)
_TRUE = {"", "1", "true", "yes", "on"}


@dataclass(frozen=True)
class FioReport:
    """The final JSON document of one fio run plus what surrounded it."""

    fio_version: str | None
    timestamp_ms: int | None
    jobs: list[dict]  # fio's jobs[] of the last (final) document
    prefix_text: str  # fio's non-JSON text (error lines), normally all before the JSON
    documents: int  # JSON documents found (status-interval dumps + final report)
    raw: dict  # the final document


def parse_fio_json(text: str) -> FioReport:
    """Parse fio's --output text; keep the last document. Raise FioError if there is none."""
    decoder = json.JSONDecoder(strict=False)  # fio does not escape control characters
    docs: list[dict] = []
    other: list[str] = []
    pos = 0
    for start in _brace_lines(text):
        if start < pos:
            continue
        try:
            doc, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            if docs:
                line = text.count("\n", 0, start) + 1
                raise FioError(
                    f"fio's JSON output ends in an incomplete document at line {line} "
                    "(was fio killed?); the raw output is kept with the run"
                ) from None
            continue  # a text line that merely starts with '{'
        if not isinstance(doc, dict):
            continue
        other.append(text[pos:start])
        docs.append(doc)
        pos = end
    if not docs:
        head = "\n".join(line for line in text.strip().splitlines()[:5])[:800]
        raise FioError(f"fio produced no JSON output: {head or '(empty output)'}")
    other.append(text[pos:])
    final = docs[-1]
    timestamp_ms = final.get("timestamp_ms")
    if timestamp_ms is None and final.get("timestamp") is not None:
        timestamp_ms = int(final["timestamp"]) * 1000
    return FioReport(
        fio_version=final.get("fio version"),
        timestamp_ms=timestamp_ms,
        jobs=list(final.get("jobs") or []),
        prefix_text="\n".join(part.strip() for part in other if part.strip()),
        documents=len(docs),
        raw=final,
    )


def _brace_lines(text: str) -> Iterator[int]:
    """Offsets of every line that starts with '{'."""
    if text.startswith("{"):
        yield 0
    for match in re.finditer(r"\n(?=\{)", text):
        yield match.end()


def job_errors(report: FioReport) -> list[str]:
    """One message per failed job, plus fio's own error lines from the non-JSON text."""
    messages = []
    for index, job in enumerate(report.jobs):
        errno = int(job.get("error") or 0)
        if errno:
            messages.append(
                f"job '{job.get('jobname')}' (#{index}) failed: "
                f"errno {errno} ({os.strerror(errno)})"
            )
    messages += [
        line.strip()
        for line in report.prefix_text.splitlines()
        if _FIO_ERROR_LINE.match(line.strip())
    ]
    return messages


# ---- helpers shared with runner.fio_logs -------------------------------------------


def version_tuple(report: FioReport) -> tuple[int, int] | None:
    """(major, minor) of the fio that wrote the report, e.g. 'fio-3.33' → (3, 33)."""
    match = re.search(r"(\d+)\.(\d+)", report.fio_version or "")
    return (int(match[1]), int(match[2])) if match else None


def json_option(report: FioReport, job: Mapping[str, Any], *names: str) -> str | None:
    """An option as fio echoed it: the job's `job options`, else `global options`."""
    for scope in (job.get("job options") or {}, report.raw.get("global options") or {}):
        for name in names:
            if name in scope:
                return str(scope[name])
    return None


def truthy(value: str | None) -> bool:
    """fio's boolean option spelling ('1', bare flag ''), as a bool."""
    return value is not None and value.strip().lower() in _TRUE


def is_grouped(report: FioReport, job: Mapping[str, Any]) -> bool:
    """Whether this jobs[] entry folds several threads (group_reporting)."""
    return truthy(json_option(report, job, "group_reporting"))


def did_io(section: Mapping[str, Any] | None) -> bool:
    """Whether a read/write/trim/mixed section saw any I/O."""
    return bool(section) and (
        int(section.get("total_ios") or 0) > 0 or int(section.get("io_bytes") or 0) > 0
    )


def implied_directions(rw: str | None) -> list[str]:
    """The directions an rw= value asks for (fio's default is read)."""
    mode = (rw or "read").split(":")[0].strip().lower()
    dirs = []
    if "read" in mode or mode in ("rw", "randrw"):
        dirs.append("read")
    if "write" in mode or mode in ("rw", "randrw"):
        dirs.append("write")
    if "trim" in mode:
        dirs.append("trim")
    return [d for d in DIRECTIONS if d in dirs] or ["read"]


def io_directions(report: FioReport, job: Mapping[str, Any]) -> list[str]:
    """Directions that did I/O in this entry; unified_rw_reporting maps back to rw=."""
    dirs = [d for d in DIRECTIONS if did_io(job.get(d))]
    if not dirs and did_io(job.get("mixed")):
        dirs = implied_directions(json_option(report, job, "rw", "readwrite"))
    return dirs


# ---- results -----------------------------------------------------------------------


def result_rows(
    report: FioReport,
    *,
    run_id: str,
    backend: str,
    job_options: Callable[[str], Mapping[str, str]],
) -> list[dict]:
    """One `results` row per jobs[] entry × direction that did I/O (every implied
    direction when the entry did none, so a failed job stays visible)."""
    rows = []
    for index, job in enumerate(report.jobs):
        name = str(job.get("jobname"))
        options = _options(report, job, job_options(name) or {})
        for direction, section in _result_sections(job, options["rw"]):
            row = {
                "run_id": run_id,
                "backend": backend,
                "job_name": name,
                "job_index": index,
                "groupid": job.get("groupid"),
                "direction": direction,
                **_direction_stats(section),
                **_clat_columns(report, job, section),
                "job_runtime_ms": job.get("job_runtime"),
                "usr_cpu": job.get("usr_cpu"),
                "sys_cpu": job.get("sys_cpu"),
                "ctx": job.get("ctx"),
                "majf": job.get("majf"),
                "minf": job.get("minf"),
                "job_error": int(job.get("error") or 0),
                **options,
            }
            rows.append(row)
    return rows


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
    return {
        "rw": get("rw", "readwrite"),
        "bs": get("bs", "blocksize"),
        "iodepth": _int_or_none(get("iodepth")),
        "numjobs": _int_or_none(get("numjobs")),
        "ioengine": get("ioengine"),
        "direct": None if direct is None else truthy(direct),
        "group_reporting": truthy(get("group_reporting")),
    }


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _direction_stats(section: Mapping[str, Any]) -> dict[str, Any]:
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


def lat_stats(section: Mapping[str, Any], kind: str) -> dict | None:
    """fio's `<kind>_ns` block, or None when fio did not measure that latency."""
    stats = section.get(f"{kind}_ns")
    if not isinstance(stats, dict):
        return None
    if "N" in stats:
        measured = int(stats["N"] or 0) > 0
    else:  # fio < 3.18 has no N: an all-zero block means "not measured"
        measured = any(stats.get(k) for k in ("min", "max", "mean"))
    return stats if measured else None


def _clat_columns(
    report: FioReport, job: Mapping[str, Any], section: Mapping[str, Any]
) -> dict[str, int | None]:
    points = {(lat_type, p): v for lat_type, p, v in _json_percentiles(report, job, section)}
    from_bins = {}
    if not any(lat_type == "clat" for lat_type, _ in points):
        bins = _typed_blocks(report, job, section, "bins").get("clat")
        if bins:
            wanted = list(RESULT_PERCENTILES.values())
            from_bins = dict(zip(wanted, bin_percentiles(bins, wanted), strict=True))
    return {
        column: points.get(("clat", p), from_bins.get(p))
        for column, p in RESULT_PERCENTILES.items()
    }


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


def bin_percentiles(bins: Mapping[str, int], percentiles: Any) -> list[int]:
    """fio's own percentile method on json+ bins: the midpoint of the first bucket whose
    running count reaches p/100·N, compared exactly (fio uses long double)."""
    buckets = sorted((int(mid), int(count)) for mid, count in bins.items())
    total = sum(count for _, count in buckets)
    out = []
    for p in percentiles:
        threshold = Fraction(float(p)) / 100 * total
        running = 0
        value = buckets[-1][0] if buckets else 0
        for mid, count in buckets:
            running += count
            if running >= threshold:
                value = mid
                break
        out.append(value)
    return out
