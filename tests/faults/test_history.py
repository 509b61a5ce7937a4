"""The history test, short mode: runner processes, a few hundred jobs, every fault kind at
least five times, then the checker over the whole history and the lake (`make soak` runs
the same for longer: tests/faults/soak.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.nemesis import KINDS, run_history_test

ROUNDS = 5


@pytest.mark.stack
@pytest.mark.slow
def test_exactly_once_survives_every_fault(tmp_path: Path) -> None:
    outcome = run_history_test(tmp_path, jobs=200, rounds=ROUNDS, publish_s=60)
    print(f"\nshort mode: {outcome.jobs} jobs in {outcome.wall_s:.0f} s, phases {outcome.phases}")
    print(f"injected {dict(outcome.injected)}; stats {outcome.report.stats}")
    assert outcome.report.problems == []
    assert {kind: outcome.injected[kind] for kind in KINDS} == {kind: ROUNDS for kind in KINDS}
    assert outcome.crashes == []  # no runner exited unless the nemesis killed it
    assert outcome.report.stats["committed jobs"] == outcome.jobs == 200
    assert outcome.skewed_commits > 0 and outcome.dropped > 0 and outcome.delayed > 0
