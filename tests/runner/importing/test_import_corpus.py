"""Every published fio document of tests/data/fio-outputs imports with fio's own numbers.

The expected values come from this file's own reading of each document (json.loads and
fio's unit rules written out plainly: before fio 2.21 `io_bytes` is KiB, before 3.0
latencies are µs under `clat`), never from the importer's code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from fiolake.cli import cli

CORPUS = Path(__file__).parent.parent.parent / "data" / "fio-outputs"
FILES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".json", ".txt"))


def _document(path: Path) -> dict:
    text = path.read_text(encoding="utf-8-sig")
    start = text.index("{") if text.startswith("{") else text.index("\n{") + 1
    return json.JSONDecoder(strict=False).raw_decode(text, start)[0]


def _expected(doc: dict) -> list[tuple[str | None, str, str, dict]]:
    """(host, job name, direction, expected values) for every job × direction with I/O."""
    out = []
    entries = doc.get("jobs") or [e for e in doc["client_stats"] if e["jobname"] != "All clients"]
    for entry in entries:
        for direction in ("read", "write", "trim"):
            section = entry.get(direction) or {}
            if not (section.get("total_ios") or section.get("io_bytes")):
                continue
            io_bytes = section.get("io_bytes")
            if io_bytes is not None and "io_kbytes" not in section:
                io_bytes *= 1024  # fio < 2.21 wrote KiB under io_bytes
            if "clat_ns" in section:
                pct = {float(p): v for p, v in section["clat_ns"].get("percentile", {}).items()}
            else:  # fio < 3.0: microseconds
                pct = {float(p): v * 1000 for p, v in section["clat"].get("percentile", {}).items()}
            want = {
                "iops": section.get("iops"),
                "runtime_ms": section.get("runtime"),
                "io_bytes": io_bytes,
                "percentiles": {p: v for p, v in pct.items() if p > 0},
            }
            out.append((entry.get("hostname"), entry["jobname"], direction, want))
    return out


def _table(lake: Path, table: str) -> list[dict]:
    rows = []
    for path in sorted((lake / "results" / table).glob("*/*.parquet")):
        rows += pq.read_table(path).to_pylist()
    return rows


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("corpus") / "lake"
    args = ["import", str(CORPUS), "--backend", "corpus", "--lake", str(where)]
    result = CliRunner().invoke(cli, [*args, "--at", "2020-01-01T00:00:00Z"])
    assert result.exit_code == 0, result.output
    return where


def test_corpus_is_large_enough() -> None:
    repos = {p.name.split("-")[0] for p in FILES}
    assert len(FILES) >= 20 and len(repos) >= 6


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_job_and_direction_has_fios_numbers(lake: Path, path: Path) -> None:
    runs = {r["run_id"]: r for r in _table(lake, "runs") if r["source_file"] == str(path)}
    assert runs and all(r["origin"] == "import" for r in runs.values())
    assert all(r["kernel"] is None and r["device"] is None for r in runs.values())
    results = [r for r in _table(lake, "results") if r["run_id"] in runs]
    percentiles = [r for r in _table(lake, "percentiles") if r["run_id"] in runs]
    doc = _document(path)
    expected = _expected(doc)
    entries = doc.get("jobs") or doc["client_stats"]
    failed = {e["jobname"]: e["error"] for e in entries if e.get("error")}
    assert expected or failed  # a job that failed before any I/O still has its row:
    for name, errno in failed.items():
        assert {r["job_error"] for r in results if r["job_name"] == name} == {errno}
        assert all(r["status"] == "failed" for r in runs.values())
    busy = [r for r in results if r["total_ios"] or r["io_bytes"] or r["iops"]]
    assert len(busy) == len(expected)  # nothing missing, nothing invented
    for host, job, direction, want in expected:
        matches = [
            r
            for r in busy
            if r["job_name"] == job
            and r["direction"] == direction
            and runs[r["run_id"]]["host"] == host
            and r["iops"] == want["iops"]
        ]
        assert matches, (job, direction, want["iops"])
        row = matches[0]
        assert row["runtime_ms"] == want["runtime_ms"]
        assert row["io_bytes"] == want["io_bytes"]
        got = {
            p["percentile"]: p["value_ns"]
            for p in percentiles
            if p["run_id"] == row["run_id"]
            and p["job_index"] == row["job_index"]
            and p["direction"] == direction
            and p["source"] == "fio_json"
        }
        assert got == want["percentiles"]
