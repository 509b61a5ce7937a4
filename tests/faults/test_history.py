"""The history test, short mode: runner processes, a few hundred jobs, every fault kind at
least five times, then the checker over the whole history and the lake (`make soak` runs
the same for longer: tests/faults/soak.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.evidence import failure_message, keep_evidence, nemesis_seed
from tests.faults.nemesis import KINDS, Outcome, run_history_test

ROUNDS = 5
JOBS = 200


def failures(outcome: Outcome, jobs: int, rounds: int) -> list[str]:
    """Everything wrong with a history test's outcome (empty when it passed)."""
    problems = list(outcome.report.problems)
    injected = {kind: outcome.injected[kind] for kind in KINDS}
    if injected != {kind: rounds for kind in KINDS}:
        problems.append(f"faults injected {injected}, wanted {rounds} of each")
    if outcome.crashes:  # no runner exits unless the nemesis kills it
        problems.append(f"runners exited unasked: {outcome.crashes}")
    committed = outcome.report.stats.get("committed jobs")
    if not committed == outcome.jobs == jobs:
        problems.append(f"{committed} of {outcome.jobs} published jobs committed, wanted {jobs}")
    if not (outcome.skewed_commits > 0 and outcome.dropped > 0 and outcome.delayed > 0):
        problems.append(
            f"a fault left no mark: {outcome.skewed_commits} skewed commits, "
            f"{outcome.dropped} dropped and {outcome.delayed} delayed responses"
        )
    return problems


@pytest.mark.stack
@pytest.mark.slow
# Loss is judged by the drain's stall detector (DRAIN_STALL_S), not by wall time: 150 s on
# a quiet machine, 243 s at load 4, and past the suite's 300 s limit at load 6-8 while
# still committing (seen: seed 628886156, stopped in the drain loop's sleep). On four
# workers the two histories run beside each other and the rest: both were still draining
# at 900 s (2026-11-27), so the bound, which only catches a hang, is 1800 s.
@pytest.mark.timeout(1800)
# On the stack's MinIO and on versitygw (issue 42): the lake's S3 server is what the
# restarts hit; OpenBao is the stack's either way.
@pytest.mark.parametrize("server", ["minio", "versitygw"])
def test_exactly_once_survives_every_fault(
    tmp_path: Path, request: pytest.FixtureRequest, server: str
) -> None:
    seed = nemesis_seed()
    outcome = run_history_test(
        tmp_path, jobs=JOBS, rounds=ROUNDS, publish_s=60, seed=seed, server=server
    )
    print(f"\nshort mode on {server}: {outcome.jobs} jobs in {outcome.wall_s:.0f} s, "
          f"phases {outcome.phases}")  # fmt: skip
    print(f"injected {dict(outcome.injected)}; stats {outcome.report.stats}")
    problems = failures(outcome, JOBS, ROUNDS)
    if problems:
        evidence = keep_evidence(tmp_path, request.node.name)
        rerun = f".venv/bin/pytest -q '{request.node.nodeid}'"
        pytest.fail(failure_message(problems, evidence, seed, rerun), pytrace=False)
