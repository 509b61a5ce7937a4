"""The fio-version tier (issue 43 part 3): fio 3.28, 3.36 and 3.42 built from
../shared/fio-src (tests/fio_versions.py, cached) and the Debian fio (3.33).

On each: every shipped profile validates and runs scaled down (--runtime 1 --size 1M, no
ramp_time or time_based) with its results, percentiles, latency bins and per-second rows
in the lake; the json+ output of three of those runs imports into the same rows, and a
plain json document into fio's numbers. The host check's table of first fio releases is
checked against the builds.
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.runner.fio.binary import FioBinary
from fiolake.runner.fio.cmdhelp import host_options, knows_option
from fiolake.runner.policy.hostfio import FIRST_FIO, SUPPORTED_FIO
from fiolake.runner.policy.options import (
    ALLOWED,
    NEWER_FIO_ALIASES,
    NEWER_FIO_OFF_ALLOWLIST,
    canonical_name,
    deny_reason,
)
from fiolake.runner.profiles import list_profiles

pytestmark = [pytest.mark.fio_versions, pytest.mark.slow]

DEBIAN_FIO = Path("/usr/bin/fio")
PROFILES = list_profiles()
TABLES = ("results", "percentiles", "latency_bins", "timeseries")
ROUND_TRIP = ("random-reads", "sync-write-latency", "latency-at-load")
ROUND_TRIP_SKIP = {"run_id"}
TINY = "[t]\nrw=randrw\nbs=4k\nsize=1M\nioengine=psync\nruntime=1\ntime_based=1\n"


@pytest.fixture(scope="module")
def fios(fio_builds: dict[str, Path]) -> dict[str, FioBinary]:
    """Every supported fio by its release: the builds and Debian's (which must be 3.33)."""
    out = {v: FioBinary(str(path), f"fio-{v}") for v, path in fio_builds.items()}
    debian = subprocess.run([DEBIAN_FIO, "--version"], capture_output=True, text=True)
    assert debian.stdout.strip() == "fio-3.33", "the tier expects Debian 12's fio 3.33"
    out["3.33"] = FioBinary(str(DEBIAN_FIO), "fio-3.33")
    assert sorted(out) == sorted(SUPPORTED_FIO)
    return out


def _rows(lake: Path, table: str) -> list[dict]:
    return [
        row for path in sorted((lake / "results" / table).glob("*/*.parquet"))
        for row in pq.read_table(path).to_pylist()
    ]  # fmt: skip


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_first_fio_table_matches_the_builds(fios: dict[str, FioBinary]) -> None:
    """FIRST_FIO names, for every allowed option, the oldest supported fio that has it; no
    fio drops one again; the newer aliases are fio 3.42's; every option newer than 3.33 is
    allowed, denied or named off the allowlist."""
    for name in sorted(ALLOWED):
        have = [v for v in SUPPORTED_FIO if knows_option(fios[v], name)]
        if name == "random_sequence_stride":  # in no release up to 3.42
            assert have == [], name
            continue
        assert have == list(SUPPORTED_FIO[SUPPORTED_FIO.index(have[0]) :]), name
        assert have[0] == FIRST_FIO.get(name, SUPPORTED_FIO[0]), name
    for alias, main in NEWER_FIO_ALIASES.items():
        answer = subprocess.run(
            [fios["3.42"].path, f"--cmdhelp={main}"], capture_output=True, text=True
        ).stdout
        assert f"alias: {alias}" in answer, alias
    listed = host_options(fios["3.36"]) | host_options(fios["3.42"])
    newer = {canonical_name(n) for n in listed} - host_options(fios["3.33"])
    unjudged = sorted(
        n
        for n in newer
        if n not in ALLOWED and not deny_reason(n) and n not in NEWER_FIO_OFF_ALLOWLIST
    )
    assert unjudged == []


def _scaled(folder: Path) -> list[Path]:
    """Copies of the shipped profiles without ramp_time and time_based: with --runtime 1
    --size 1M each job ends after 1 MiB or 1 s (41 s for all, not 75)."""
    folder.mkdir()
    copies = []
    for profile in PROFILES:
        lines = profile.path.read_text().splitlines()
        copy = folder / profile.path.name
        kept = [x for x in lines if not x.startswith(("ramp_time", "time_based"))]
        copy.write_text("\n".join(kept) + "\n")
        copies.append(copy)
    return copies


@pytest.mark.parametrize("version", SUPPORTED_FIO)
def test_every_profile_runs_and_round_trips(
    version: str, fios: dict[str, FioBinary], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "fio").symlink_to(fios[version].path)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")  # `fiolake run` runs that fio
    _invoke("validate", *(p.name for p in PROFILES))
    lake = tmp_path / "lake"
    summary = _invoke(
        "run", *map(str, _scaled(tmp_path / "profiles")), "--create-dir",
        "--dir", str(tmp_path / "target"), "--lake", str(lake), "--backend", "v",
        "--runtime", "1", "--size", "1M", "--format", "json",
    )  # fmt: skip
    assert {row["status"] for row in json.loads(summary)} == {"ok"}
    runs = _rows(lake, "runs")
    assert sorted(r["profile"] for r in runs) == [p.name for p in PROFILES]
    binary = fios[version]
    assert {(r["fio_version"], r["fio_path"]) for r in runs} == {(binary.version, binary.path)}
    # every run that did I/O (git-small-files' 1 MiB of tiny files may all go to layout)
    busy = {r["run_id"] for r in _rows(lake, "results") if r["io_bytes"]}
    assert len(busy) >= len(runs) - 1
    for table in TABLES:
        assert busy <= {r["run_id"] for r in _rows(lake, table)}, table
    # json+: a run's own output imports into the same rows (libaio, psync, six rate steps)
    runs = [r for r in runs if r["profile"] in ROUND_TRIP]
    for run in runs:
        raw = lake / "raw" / run["run_id"]
        logs = tmp_path / "logs" / run["run_id"]
        with tarfile.open(raw / "logs.tar.gz") as tar:
            tar.extractall(logs, filter="data")
        _invoke(
            "import", str(raw / "fio.json"), "--backend", "v", "--lake", str(lake),
            "--profile", run["profile"], "--logs", str(logs),
        )  # fmt: skip
    imported = {r["profile"]: r["run_id"] for r in _rows(lake, "runs") if r["origin"] == "import"}
    assert len(imported) == len(runs)
    for table in TABLES:
        rows = _rows(lake, table)
        for run in runs:
            mine, theirs = (
                [
                    {k: v for k, v in r.items() if k not in ROUND_TRIP_SKIP}
                    for r in rows
                    if r["run_id"] == rid
                ]
                for rid in (run["run_id"], imported[run["profile"]])
            )
            assert mine == theirs and mine, (table, run["profile"])
    # json: fio's own document (no bins) imports with fio's numbers
    (tmp_path / "tiny.fio").write_text(TINY)
    doc = subprocess.run(
        [fios[version].path, "--output-format=json", "tiny.fio"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    (tmp_path / "tiny.json").write_text(doc)
    json_lake = tmp_path / "json-lake"
    _invoke("import", str(tmp_path / "tiny.json"), "--backend", "j", "--lake", str(json_lake))
    (job,) = json.loads(doc)["jobs"]
    (run,) = _rows(json_lake, "runs")
    assert run["fio_version"] == f"fio-{version}"
    results = {r["direction"]: r for r in _rows(json_lake, "results")}
    p99 = {
        (r["direction"]): r["value_ns"]
        for r in _rows(json_lake, "percentiles")
        if r["percentile"] == 99.0
    }
    for direction in ("read", "write"):
        assert results[direction]["iops"] == job[direction]["iops"]
        assert results[direction]["io_bytes"] == job[direction]["io_bytes"]
        assert p99[direction] == job[direction]["clat_ns"]["percentile"]["99.000000"]
