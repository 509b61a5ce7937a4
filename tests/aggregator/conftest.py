"""Fixtures for aggregator tests: small synthetic lakes (see lakegen.py)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.layout import RESULTS_PREFIX, TABLES
from tests.aggregator import lakegen


@pytest.fixture
def two_backends(tmp_path: Path) -> Path:
    """Campaign c1: backend a (iops 1000) and b (iops 800), 3 repetitions each, ±1% jitter."""
    store = lakegen.local_store(tmp_path / "lake")
    lakegen.write_campaign(
        store,
        "c1",
        {
            "a": {("job1", "read"): {"iops": 1000.0}, ("job1", "write"): {"iops": 500.0}},
            "b": {("job1", "read"): {"iops": 800.0}, ("job1", "write"): {"iops": 500.0}},
        },
        3,
        jitter=0.01,
    )
    return tmp_path / "lake"


@dataclass(frozen=True)
class FioLakes:
    """The same lake written by real fio, compacted and (a copy) left loose."""

    compacted: Path
    loose: Path


@pytest.fixture(scope="session")
def fio_lakes(tmp_path_factory: pytest.TempPathFactory) -> FioLakes:
    """Two backends × two repetitions of a real fio profile (every table has rows); one
    copy compacted with `fiolake lake compact`, one left as per-run files plus an orphan
    attempt's files (rows of a run no commit marker names)."""
    base = tmp_path_factory.mktemp("fio-lakes")
    loose = base / "loose"
    for backend in ("disk-a", "disk-b"):
        target = base / backend
        args = ["run", "random-reads", "--create-dir", "--dir", str(target), "--backend", backend]
        args += ["--lake", str(loose), "--runtime", "1", "--size", "4M", "--repeat", "2"]
        res = CliRunner().invoke(cli, [*args, "--campaign", "engines", "--format", "csv"])
        assert res.exit_code == 0, res.output
    for table in TABLES:  # an orphan attempt: its files, no commit marker
        first = sorted((loose / RESULTS_PREFIX / table).rglob("*.parquet"))[0]
        data = pq.read_table(first)
        data = data.set_column(
            data.schema.get_field_index("run_id"),
            "run_id",
            pa.array(["r-orphan"] * data.num_rows, pa.string()),
        )
        pq.write_table(data, first.parent / "r-orphan.parquet")
    compacted = base / "compacted"
    shutil.copytree(loose, compacted)
    res = CliRunner().invoke(cli, ["lake", "compact", "--lake", str(compacted)])
    assert res.exit_code == 0, res.output
    return FioLakes(compacted, loose)
