"""A question is asked with the cyclic GC off (issue 44), and the GC is back after it,
even when the question fails: the tests' own process runs many questions."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from fiolake.cli.common import connect
from fiolake.store import LocalStore
from tests.aggregator import lakegen


def test_the_question_runs_without_the_cyclic_gc_and_gives_it_back(tmp_path: Path) -> None:
    lakegen.write_run(LocalStore(tmp_path / "lake"), run_id="run-1", job_id="job-1")
    assert gc.isenabled()
    with connect(str(tmp_path / "lake")) as lake:
        assert not gc.isenabled()
        assert lake.con.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), connect(str(tmp_path / "lake")):
        1 / 0  # noqa: B018
    assert gc.isenabled()


def test_a_gc_already_off_stays_off(tmp_path: Path) -> None:
    lakegen.write_run(LocalStore(tmp_path / "lake"), run_id="run-1", job_id="job-1")
    gc.disable()
    try:
        with connect(str(tmp_path / "lake")):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
