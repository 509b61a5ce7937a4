"""fio's JSON documents out of whatever text holds them, checked, one per fio invocation
and client.

A file may hold fio's error lines and normal output before the JSON, several documents
(one per invocation, or --status-interval dumps of one invocation, of which the last
counts), or a client/server document (`client_stats`, one run per client: a server's
host and port). Everything that
is not a complete, plausible fio document is refused with what is wrong (FioError);
docs/import.md lists the rules.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fiolake.errors import FioError
from fiolake.runner.importing import eras
from fiolake.runner.report.document import DIRECTIONS, split_documents

FILE_CAP_BYTES = 256 * 1024 * 1024  # a fio document is KiB to a few MiB (json+, many jobs)
MAX_DEPTH = 32  # fio's own documents nest 8 deep at most
ALL_CLIENTS = "All clients"  # fio's client: the sum over hosts, not a run of its own
# Counters that cannot be negative; a negative one is a damaged or edited document.
_COUNTERS = ("io_bytes", "io_kbytes", "total_ios", "runtime", "iops", "bw", "bw_bytes")
_NO_JSON = (
    "no fio JSON document in it — fio's normal text output cannot be imported: "
    "run fio with --output-format=json (or json+)"
)

_NOT_FIO = (
    "its JSON is not fio output (no jobs[] or client_stats[] of fio jobs) — give the output "
    "of fio --output-format=json"
)
_CUT_SHORT = (
    "its JSON is cut short or malformed (was fio killed, or the file truncated?) — import "
    "fio's complete output"
)


@dataclass(frozen=True)
class FoundRun:
    """One fio invocation on one client, as a document in today's layout."""

    document: int  # 1-based position of its document in the file
    host: str | None  # the client it ran on, `host` or `host:port` (None: not client/server)
    doc: dict  # normalised (runner.importing.eras): this client's entries as `jobs`
    text: str  # the document's text as found
    prefix_text: str  # the text before it (fio's warnings and error lines)
    digest: str  # sha256 of `doc` in canonical JSON: the run's content identity


class _NotANumber(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotANumber(name)


def read_text(data: bytes) -> str:
    """A file's bytes as text: capped, UTF-8 (a byte-order mark dropped), not binary."""
    if len(data) > FILE_CAP_BYTES:
        raise FioError(f"larger than {FILE_CAP_BYTES >> 20} MiB, the cap for one file")
    if b"\x00" in data:
        raise FioError("not text (it holds NUL bytes): " + _NO_JSON)
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def found_runs(text: str) -> list[FoundRun]:
    """Every run the text holds; FioError when it holds none or a bad one."""
    decoder = json.JSONDecoder(strict=False, parse_constant=_refuse_constant)
    try:
        docs, between = split_documents(text, decoder)
    except _NotANumber as exc:
        raise FioError(f"{exc} is not a number fio writes (damaged output?)") from None
    except RecursionError:
        # json gives up near Python's recursion limit (~1000 levels), far past MAX_DEPTH
        raise FioError(
            "JSON nested too deep for the parser (hundreds of levels; fio's own nest 8 at "
            "most): not fio output"
        ) from None
    except FioError:
        raise FioError(_CUT_SHORT) from None
    fio_docs = [(i, d) for i, d in enumerate(docs) if _is_fio(d.doc)]
    if not fio_docs:
        if docs:
            raise FioError(_NOT_FIO)
        raise FioError(_CUT_SHORT if "\n{" in f"\n{text}" else _NO_JSON)
    for i, found in fio_docs:  # every document whole before any of its fields is used
        _check(found.doc, i + 1)
    runs: list[FoundRun] = []
    for pos, (i, found) in enumerate(fio_docs):
        later = fio_docs[pos + 1][1].doc if pos + 1 < len(fio_docs) else None
        if later is not None and _superseded(found.doc, later):
            continue  # a --status-interval dump: the later document holds it all
        try:
            doc = eras.normalise(found.doc)
        except (TypeError, ValueError) as exc:
            raise FioError(f"document {i + 1}: malformed fio JSON ({exc})") from None
        runs += _per_host(doc, i + 1, text[found.start : found.end], between[i].strip())
    return runs


def _is_fio(doc: dict) -> bool:
    jobs = doc.get("jobs") if "jobs" in doc else doc.get("client_stats")
    return (
        isinstance(jobs, list)
        and bool(jobs)
        and all(isinstance(j, dict) and "jobname" in j for j in jobs)
    )


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            break
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, dict | list):
            stack += [(child, level + 1) for child in children if isinstance(child, dict | list)]
    return deepest


def _check(doc: dict, number: int) -> None:
    """Refuse a document whose fields the import reads are not what fio writes: too deep,
    a counter, `elapsed` or `timestamp` that is not a finite number, a negative counter."""
    if _depth(doc) > MAX_DEPTH:
        raise FioError(f"document {number}: JSON nested deeper than {MAX_DEPTH} levels")
    for key in ("timestamp", "timestamp_ms"):
        _number(doc.get(key), f"document {number}: {key}")
    for entry in eras.entries(doc):
        job = f"document {number}: job '{entry.get('jobname')}'"
        _number(entry.get("elapsed"), f"{job} elapsed")
        for direction in (*DIRECTIONS, "mixed"):
            section = entry.get(direction)
            if not isinstance(section, dict):
                continue
            for key in _COUNTERS:
                value = _number(section.get(key), f"{job} {direction} {key}")
                if value is not None and value < 0:
                    raise FioError(f"{job} {direction} {key} is negative ({value})")


def _number(value: Any, what: str) -> float | None:
    """`value` when it is a finite number or absent (None); FioError naming `what`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FioError(f"{what} is {value!r}, not a number")
    return value


def _superseded(doc: dict, later: dict) -> bool:
    """Is `doc` a --status-interval dump of the invocation `later` reports on? Same jobs,
    I/O counts grown, and the time between the two documents is the jobs' progress
    (another invocation of the same jobs starts its `elapsed` from 0 again)."""
    a, b = list(eras.entries(doc)), list(eras.entries(later))
    if [(j.get("jobname"), j.get("groupid")) for j in a] != [
        (j.get("jobname"), j.get("groupid")) for j in b
    ]:
        return False
    t_a, t_b = doc.get("timestamp"), later.get("timestamp")
    if not isinstance(t_a, int) or not isinstance(t_b, int):
        return False
    progress = max((_elapsed(y) - _elapsed(x) for x, y in zip(a, b, strict=True)), default=0)
    pairs = list(zip(a, b, strict=True))
    # Two invocations of one job that did the same I/O are two runs, not a dump and its run.
    grown = all(_ios(y) >= _ios(x) for x, y in pairs) and any(_ios(y) > _ios(x) for x, y in pairs)
    return grown and progress >= 0 and abs((t_b - t_a) - progress) <= 2


def _elapsed(entry: dict) -> float:
    value = entry.get("elapsed")
    return float(value) if isinstance(value, int | float) else 0.0


def _ios(entry: dict) -> int:
    return sum(
        int((entry.get(d) or {}).get("total_ios") or 0)
        for d in DIRECTIONS
        if isinstance(entry.get(d), dict)
    )


def _per_host(doc: dict, number: int, text: str, prefix: str) -> Iterator[FoundRun]:
    if "client_stats" not in doc:
        yield FoundRun(number, None, doc, text, prefix, _digest(doc))
        return
    # fio's unit is the client, a server's host and port: two `fio --server` on one host
    # are two runs. The host is recorded as `host:port` only when the document holds
    # several servers on that host (the port is what tells them apart); else as the host
    # alone, as fio's own reports name it.
    clients: dict[tuple[str, str], list[dict]] = {}
    for entry in doc["client_stats"]:
        if entry.get("jobname") != ALL_CLIENTS:
            clients.setdefault(_client_of(entry), []).append(entry)
    ports: dict[str, int] = {}
    for host, _port in clients:
        ports[host] = ports.get(host, 0) + 1
    for (host, port), jobs in clients.items():
        one = {k: v for k, v in doc.items() if k not in ("client_stats", "disk_util")}
        one["jobs"] = jobs
        one["disk_util"] = [d for d in doc.get("disk_util") or [] if _on(d, host, port)]
        name = f"{host}:{port}" if ports[host] > 1 else host
        yield FoundRun(number, name or None, one, text, prefix, _digest(one))


def _client_of(entry: dict) -> tuple[str, str]:
    """(host, port) of a client_stats or disk_util entry ('' when fio wrote none)."""
    return str(entry.get("hostname") or ""), str(entry.get("port") or "")


def _on(disk: dict, host: str, port: str) -> bool:
    """Is a disk_util entry that client's? (An entry without a port: its host's.)"""
    disk_host, disk_port = _client_of(disk)
    return disk_host == host and disk_port in ("", port)


def _digest(doc: dict) -> str:
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
