"""The fast tier's budget (issue 40): `make test-fast` is the inner loop, so it runs the
tests that need no server and cost at most BUDGET_S of CPU each, setup included.

The tests over it (real fio runs, mkfs on loop devices, the app's pages, a lake built and
compacted per test) are listed in tests/heavy.txt and marked `heavy` at collection: `make
test` and `make test-changed` run them, `make test-fast` does not. On two cores, 13 % of
the fast tier's tests took 52 % of its CPU (2026-11-28): its wall time is CPU over two.

The list is measured, not guessed: `make heavy-list` adds every test the last run's CPU
ledger (tests/cpu_ledger.py, `build/test-cpu.tsv`) charged more than the budget. A module
fixture is charged to the first test that uses it, so a few rounds of `make test-fast`
and `make heavy-list` settle the list. A name the suite no longer has fails a whole-suite
run (a renamed test would otherwise slip back into the fast tier unnoticed).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests import cpu_ledger

BUDGET_S = 0.4
LIST = Path(__file__).with_name("heavy.txt")
HEADER = (
    "# Tests over the fast tier's CPU budget (tests/heavy.py): marked `heavy`, so `make\n"
    "# test-fast` leaves them to `make test`. `make heavy-list` adds to it; one node id a line.\n"
)


def listed(path: Path | None = None) -> set[str]:
    """The node ids in the list (comments and blank lines skipped)."""
    path = path or LIST
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def over_budget(ledger: Path, budget_s: float = BUDGET_S) -> set[str]:
    """The tests a CPU ledger charged more than `budget_s` (setup, call and teardown)."""
    cpu: dict[str, float] = defaultdict(float)
    for nodeid, _wall, spent in cpu_ledger.phases(ledger):
        cpu[nodeid] += spent
    return {nodeid for nodeid, spent in cpu.items() if spent > budget_s}


def write(ids: set[str], path: Path | None = None) -> None:
    """The list, sorted, under its header."""
    (path or LIST).write_text(HEADER + "".join(f"{i}\n" for i in sorted(ids)), encoding="utf-8")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the listed tests `heavy`; on a whole-suite run, fail on names it lacks."""
    heavy = listed()
    for item in items:
        if item.nodeid in heavy:
            item.add_marker(pytest.mark.heavy)
    if config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.keyword:
        gone = sorted(heavy - {item.nodeid for item in items})
        if gone:
            raise pytest.UsageError(
                f"{LIST} names {len(gone)} test(s) the suite does not have: "
                + ", ".join(gone[:5])
                + " — remove them from the list (renamed tests: put the new name instead)"
            )


if __name__ == "__main__":
    before = listed()
    after = before | over_budget(Path(sys.argv[1]))
    write(after)
    print(f"{LIST}: {len(after)} tests ({len(after - before)} added)", file=sys.stderr)
