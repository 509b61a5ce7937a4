"""`make faults-repeat N=10`: the short-mode history test N times back to back, one table.

Measures the flake rate of the history test: each run is the exact test pytest runs
(`tests/faults/test_history.py`), with a fresh nemesis seed printed in its row so a
failing run can be replayed. A failure keeps its evidence under
build/test-artifacts/faults/repeat-<i>/.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tests.faults.evidence import keep_evidence, nemesis_seed
from tests.faults.nemesis import run_history_test
from tests.faults.test_history import JOBS, ROUNDS, failures

HEADER = ("run", "result", "faults injected", "commits", "wall s", "seed")


def main() -> int:
    runs = int(os.environ.get("N", "10"))
    rows: list[tuple[object, ...]] = []
    print("  ".join(HEADER), flush=True)
    for i in range(1, runs + 1):
        seed = nemesis_seed()
        with tempfile.TemporaryDirectory(prefix="fiolake-faults-") as tmp:
            out = run_history_test(Path(tmp), jobs=JOBS, rounds=ROUNDS, publish_s=60, seed=seed)
            problems = failures(out, JOBS, ROUNDS)
            if problems:
                evidence = keep_evidence(Path(tmp), f"repeat-{i}")
                print("\n".join([*problems[:10], f"evidence: {evidence}"]), file=sys.stderr)
        commits = out.report.stats.get("commits acknowledged", 0)
        result = "fail" if problems else "pass"
        rows.append((i, result, sum(out.injected.values()), commits, f"{out.wall_s:.0f}", seed))
        print("  ".join(str(v) for v in rows[-1]), flush=True)
    passed = sum(1 for r in rows if r[1] == "pass")
    print(f"\n| {' | '.join(HEADER)} |\n|{'---|' * len(HEADER)}")
    for row in rows:
        print(f"| {' | '.join(str(v) for v in row)} |")
    print(f"\n{passed} of {runs} passed")
    return 0 if passed == runs else 1


if __name__ == "__main__":
    sys.exit(main())
