"""The CPU ledger (tests/cpu_ledger.py) charges each test phase the CPU it spent, its
children's included, and sums the ledger by test file."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import cpu_ledger

pytest_plugins = ["pytester"]


def test_each_phase_is_charged_its_own_and_its_childrens_cpu(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger = tmp_path / "cpu.tsv"
    monkeypatch.setattr(cpu_ledger, "LEDGER", str(ledger))
    pytester.makepyfile(
        test_spend=f"""
        import subprocess, time

        def burn(seconds):
            end = time.process_time() + seconds
            while time.process_time() < end:
                pass

        def test_own():
            burn(0.3)

        def test_child():
            subprocess.run([{sys.executable!r}, "-c", "import time\\n"
                            "end = time.process_time() + 0.3\\n"
                            "while time.process_time() < end: pass"], check=True)

        def test_idle():
            time.sleep(0.3)
        """
    )
    pytester.runpytest_inprocess("-p", "tests.cpu_ledger", "-p", "no:cacheprovider")
    lines = [line.split("\t") for line in ledger.read_text().splitlines()]
    calls = {nodeid.split("::")[1]: row for nodeid, phase, *row in lines if phase == "call"}
    assert {phase for _, phase, *_ in lines} == {"setup", "call", "teardown"}
    assert len(lines) == 9
    own, child, idle = calls["test_own"], calls["test_child"], calls["test_idle"]
    assert float(own[1]) >= 0.29 and float(own[2]) < 0.1  # wall, own, children
    assert float(child[2]) >= 0.29 and float(child[1]) < 0.25
    assert float(idle[0]) >= 0.29 and float(idle[1]) + float(idle[2]) < 0.1
    table = cpu_ledger.summary(ledger).splitlines()
    assert table[1].endswith("test_spend.py") and table[-1].endswith("all 1 files")
    assert float(table[1].split()[0]) >= 0.58


def test_a_phase_writes_to_the_ledger_it_began_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ledger unset while a phase ran (a test that patched it, undone in its teardown)
    still gets that phase's line — once written to a file named `None` in the checkout."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cpu_ledger, "LEDGER", str(tmp_path / "cpu.tsv"))
    phase = cpu_ledger._ledgered(SimpleNamespace(nodeid="t.py::t"), "teardown")  # type: ignore[arg-type]
    next(phase)
    monkeypatch.setattr(cpu_ledger, "LEDGER", None)
    with pytest.raises(StopIteration):
        phase.send(None)
    assert (tmp_path / "cpu.tsv").read_text().startswith("t.py::t\tteardown\t")
    assert not (tmp_path / "None").exists()
