"""The fast tier's budget (tests/heavy.py): the ledger's tests over it are listed, the
listed ones are marked `heavy`, and a whole-suite run fails on a name it lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import heavy

pytest_plugins = ["pytester"]

SUITE = """
def test_cheap():
    pass

def test_dear():
    pass
"""


def test_over_budget_sums_every_phase_of_a_test(tmp_path: Path) -> None:
    ledger = tmp_path / "cpu.tsv"
    ledger.write_text(
        "t.py::a\tsetup\t1.0\t0.30\t0.00\n"  # a module fixture: charged to its first test
        "t.py::a\tcall\t0.1\t0.05\t0.10\n"
        "t.py::b\tcall\t0.5\t0.20\t0.20\n"  # exactly the budget: within it
        "t.py::c\tteardown\t0.1\t0.00\t0.00\n"
    )
    assert heavy.over_budget(ledger, budget_s=0.4) == {"t.py::a"}


def test_the_list_keeps_its_header_and_skips_comments(tmp_path: Path) -> None:
    path = tmp_path / "heavy.txt"
    heavy.write({"t.py::b", "t.py::a"}, path)
    assert path.read_text().startswith("# ")
    assert path.read_text().splitlines()[-2:] == ["t.py::a", "t.py::b"]
    assert heavy.listed(path) == {"t.py::a", "t.py::b"}


def test_listed_tests_are_marked_and_a_missing_name_fails_the_whole_suite(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini("[pytest]\ntestpaths = suite\nmarkers = heavy: over budget\n")
    pytester.mkdir("suite")
    pytester.path.joinpath("suite", "test_it.py").write_text(SUITE)
    listing = pytester.path / "heavy.txt"
    monkeypatch.setattr(heavy, "LIST", listing)
    heavy.write({"suite/test_it.py::test_dear"}, listing)
    fast = pytester.runpytest_inprocess("-p", "tests.heavy", "-m", "not heavy")
    fast.assert_outcomes(passed=1, deselected=1)
    heavy.write({"suite/test_it.py::test_dear", "suite/test_it.py::test_renamed"}, listing)
    stale = pytester.runpytest_inprocess("-p", "tests.heavy", "-m", "not heavy")
    assert stale.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"{listing} names 1 test(s) the suite does not have: suite/test_it.py::test_renamed"
        " — remove them from the list (renamed tests: put the new name instead)"
    ) in stale.stderr.str()
    # a run of chosen files says nothing about the rest of the list
    pytester.runpytest_inprocess("-p", "tests.heavy", "suite/test_it.py").assert_outcomes(passed=2)
