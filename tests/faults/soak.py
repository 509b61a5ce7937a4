"""`make soak`: the history test for SOAK_MINUTES (default 30), then a summary table.

SOAK_MINUTES=5 make soak

A failure keeps its evidence in build/test-artifacts/faults/soak/ and prints a one-line
reproduction with the nemesis seed (FIOLAKE_NEMESIS_SEED replays the fault schedule).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from tests.faults.evidence import failure_message, keep_evidence, nemesis_seed
from tests.faults.nemesis import KINDS, run_history_test
from tests.faults.test_history import failures

# Observed in the short mode on 2 shared cores: ~1.5 jobs/s and a round of every fault
# kind in ~30 s; the soak keeps about that pace for its whole length.
JOBS_PER_MINUTE = 60
ROUND_S = 30


def main() -> int:
    minutes = float(os.environ.get("SOAK_MINUTES", "30"))
    publish_s = minutes * 60 * 0.8  # the rest drains the backlog
    rounds = max(1, int(publish_s / ROUND_S))
    jobs = max(10, int(JOBS_PER_MINUTE * minutes * 0.8))
    seed = nemesis_seed()
    with tempfile.TemporaryDirectory(prefix="fiolake-soak-") as tmp:
        out = run_history_test(Path(tmp), jobs=jobs, rounds=rounds, publish_s=publish_s, seed=seed)
        problems = failures(out, jobs, rounds)
        evidence = keep_evidence(Path(tmp), "soak") if problems else None
    rows = [(f"injected: {kind}", out.injected[kind]) for kind in KINDS]
    rows += [
        ("responses dropped by the proxy", out.dropped),
        ("responses delayed by the proxy", out.delayed),
        ("commits by the skewed runner", out.skewed_commits),
        ("runner exits nobody asked for", len(out.crashes)),
        *out.report.stats.items(),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"soak: {minutes:g} min asked, {out.wall_s / 60:.1f} min wall, {out.jobs} jobs")
    print(f"nemesis seed: {seed}")
    for name, value in rows:
        print(f"{name:<{width}}  {value:>6}")
    print(f"checker: {'PASSED' if not problems else 'FAILED'}")
    if evidence is not None:
        rerun = f"SOAK_MINUTES={minutes:g} make soak"
        print(failure_message(problems, evidence, seed, rerun))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
