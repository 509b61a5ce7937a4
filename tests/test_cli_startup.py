"""`fiolake --help` (and each command's) stays fast: it never imports the heavy libraries.

Judged by what gets imported, not by a stopwatch, so a loaded machine cannot flake it;
`python -X importtime` shows boto3 alone costs ~0.2 s, duckdb and pyarrow more.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fiolake.cli import COMMANDS
from fiolake.store import LocalStore
from tests.aggregator import lakegen

HEAVY = ("boto3", "botocore", "duckdb", "pyarrow", "streamlit", "hvac", "minio", "pandas")

PROBE = """
import json, os, sys
from click.testing import CliRunner
from fiolake.cli import cli
result = CliRunner().invoke(cli, sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(os.environ["HEAVY"].split(",")))
print(json.dumps({"code": result.exit_code, "heavy": heavy}))
"""


@pytest.mark.parametrize("argv", [["--help"], *[[name, "--help"] for name in sorted(COMMANDS)]])
def test_help_imports_no_heavy_library(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        env={**os.environ, "HEAVY": ",".join(HEAVY)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == {"code": 0, "heavy": []}


def test_a_query_of_a_local_lake_imports_no_s3_library(tmp_path: Path) -> None:
    # botocore costs `fiolake sql` 0.2-0.8 s; a local lake never talks S3 (issue 44).
    lakegen.write_run(LocalStore(tmp_path / "lake"), run_id="run-1", job_id="job-1")
    argv = ["sql", "select 1", "--lake", str(tmp_path / "lake")]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        env={**os.environ, "HEAVY": ",".join(HEAVY), "FIOLAKE_SNAPSHOT_CACHE": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == {"code": 0, "heavy": ["duckdb", "pyarrow"]}
