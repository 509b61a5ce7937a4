"""fio's JSON / json+ report: the final document, its errors, and helpers every reader shares.

fio's output format (see docs/fio-output.md): fio may print error lines before the
JSON, several cumulative documents (status-interval), and older versions (3.1) lack
`N`, `bw_bytes`, `job_runtime` and keep percentiles under `clat_ns` only. Values stay in
raw units; a statistic fio did not measure is null, never 0.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fiolake.errors import FioError

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
    docs, other = split_documents(text)
    if not docs:
        head = "\n".join(line for line in text.strip().splitlines()[:5])[:800]
        raise FioError(f"fio produced no JSON output: {head or '(empty output)'}")
    return report_of(docs[-1].doc, prefix_text=_joined(other), documents=len(docs))


@dataclass(frozen=True)
class Document:
    """One JSON document found in fio's output text, with where it sits in that text."""

    doc: dict
    start: int  # offset of its opening '{'
    end: int  # offset just past its closing '}'


def split_documents(
    text: str, decoder: json.JSONDecoder | None = None
) -> tuple[list[Document], list[str]]:
    """Every JSON object that starts a line of `text`, in order, and the text between them.

    fio writes error lines before its JSON and, with --status-interval, several complete
    documents one after another; a document cut short after a complete one raises FioError.
    `decoder` defaults to a non-strict one (fio does not escape control characters).
    """
    decoder = decoder or json.JSONDecoder(strict=False)
    docs: list[Document] = []
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
        docs.append(Document(doc, start, end))
        pos = end
    other.append(text[pos:])
    return docs, other


def report_of(final: dict, *, prefix_text: str = "", documents: int = 1) -> FioReport:
    """A FioReport over one (final) document; `jobs` are its jobs[]."""
    timestamp_ms = final.get("timestamp_ms")
    if timestamp_ms is None and final.get("timestamp") is not None:
        timestamp_ms = int(final["timestamp"]) * 1000
    return FioReport(
        fio_version=final.get("fio version"),
        timestamp_ms=timestamp_ms,
        jobs=list(final.get("jobs") or []),
        prefix_text=prefix_text,
        documents=documents,
        raw=final,
    )


def _joined(parts: list[str]) -> str:
    return "\n".join(part.strip() for part in parts if part.strip())


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


# ---- helpers shared by the readers -------------------------------------------


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
    return section is not None and (
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
