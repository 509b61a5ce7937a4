"""Commands that only read the lake end without the interpreter's teardown (ENDS_AT_ONCE):
their output is still whole, errors keep their codes, and the rest exit as usual."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

from tests.aggregator import lakegen

FIOLAKE = [sys.executable, "-m", "fiolake"]
# `python -c` with an atexit handler: it prints only when the interpreter tears down.
WITH_TEARDOWN_MARK = """
import atexit, sys
atexit.register(lambda: print("teardown ran", file=sys.stderr))
sys.argv = ["fiolake", *sys.argv[1:]]
from fiolake.cli import main
main()
"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lake")
    store = lakegen.local_store(root)
    lakegen.write_campaign(store, "night-1", {"nvme": {("job1", "read"): {"iops": 1000}}}, 2)
    return root


def run(*argv: str, stdout: int | IO[str] = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FIOLAKE_SNAPSHOT_CACHE": "off"}
    return subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env)


def test_a_reader_skips_the_teardown_and_a_writer_does_not(lake: Path) -> None:
    read = run(sys.executable, "-c", WITH_TEARDOWN_MARK, "sql", "--lake", str(lake), "SELECT 1")
    assert read.returncode == 0, read.stderr
    assert "teardown ran" not in read.stderr
    other = run(sys.executable, "-c", WITH_TEARDOWN_MARK, "profiles")
    assert other.returncode == 0, other.stderr
    assert "teardown ran" in other.stderr


def test_a_big_answer_arrives_whole(lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    sql = "SELECT range AS n FROM range(200000)"
    with out.open("w") as fh:
        done = run(*FIOLAKE, "sql", "--lake", str(lake), sql, "--format", "csv",
                   "--max-rows", "200000", stdout=fh)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 200001 and lines[-1] == "199999"


def test_a_reader_that_stops_reading_gets_no_traceback(lake: Path) -> None:
    sql = "SELECT range AS n FROM range(200000)"
    done = subprocess.run(
        f"{' '.join(FIOLAKE)} sql --lake {lake} '{sql}' --format csv --max-rows 200000 | head -2",
        shell=True,
        capture_output=True,
        text=True,
        env={**os.environ, "FIOLAKE_SNAPSHOT_CACHE": "off"},
    )
    assert done.stdout == "n\n0\n"
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_a_reader_started_without_stdout_exits_0_without_a_traceback(lake: Path) -> None:
    done = subprocess.run(
        f"{' '.join(FIOLAKE)} sql --lake {lake} 'SELECT 1' >&-",
        shell=True,
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "FIOLAKE_SNAPSHOT_CACHE": "off"},
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_an_error_keeps_its_message_and_code(lake: Path) -> None:
    done = run(*FIOLAKE, "compare", "--lake", str(lake), "--campaign", "nope")
    assert done.returncode == 1
    assert done.stderr == (
        "Error: no committed runs match campaign 'nope' — see which exist: "
        'fiolake sql "SELECT DISTINCT campaign_id FROM runs"\n'
    )


def test_a_gate_ends_at_once_with_its_verdict_as_its_code(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    for night, iops in (("night-1", 1000.0), ("night-2", 1000.0), ("night-3", 500.0)):
        lakegen.write_campaign(
            store, night, {"nvme": {("job1", "read"): {"iops": iops}}}, 3, jitter=0.01
        )
    lake = str(tmp_path / "lake")
    # as good: none worse, exit 0; half as fast: every metric worse, exit 1
    for campaign, code, worse in (("night-2", 0, 0), ("night-3", 1, 4)):
        done = run(sys.executable, "-c", WITH_TEARDOWN_MARK, "gate", "--lake", lake,
                   "--campaign", campaign, "--baseline-campaign", "night-1")  # fmt: skip
        assert done.returncode == code, done.stderr
        assert "teardown ran" not in done.stderr
        assert f"gate: {campaign} vs night-1: {worse} worse" in done.stderr
