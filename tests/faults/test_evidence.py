"""A failed history test keeps its evidence and says how to run it again."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.faults import evidence
from tests.faults.checker import Report
from tests.faults.nemesis import KINDS, Outcome
from tests.faults.test_history import failures


def test_evidence_is_copied_and_the_failure_names_it_with_the_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evidence, "ARTIFACTS", tmp_path / "artifacts")
    run = tmp_path / "run"
    for name in ("r1/history.jsonl", "r1/runner.log", "r1/spool/r-1/meta.json",
                 "publisher.jsonl", "lake-listing.txt", "stack/minio/data.bin"):  # fmt: skip
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text(name)
    outcome = Outcome(
        Report(problems=["zombie commit: r2 invoked the commit of j"], stats={}),
        seed=1234,
        injected=Counter({kind: 5 for kind in KINDS}),
        jobs=200,
        skewed_commits=1,
        dropped=1,
        delayed=1,
    )
    problems = failures(outcome, 200, 5)
    assert problems == [
        "zombie commit: r2 invoked the commit of j",
        "None of 200 published jobs committed, wanted 200",
    ]
    kept = evidence.keep_evidence(run, "test_x")
    assert kept == tmp_path / "artifacts" / "test_x"
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*") if p.is_file()) == [
        "lake-listing.txt", "publisher.jsonl", "r1/history.jsonl", "r1/runner.log",
        "r1/spool/r-1/meta.json",
    ]  # fmt: skip
    message = evidence.failure_message(problems, kept, outcome.seed, "pytest -q 'x::y'")
    assert message.splitlines()[-2:] == [
        f"evidence: {kept}",
        "reproduce: FIOLAKE_NEMESIS_SEED=1234 pytest -q 'x::y'",
    ]


def test_the_seed_comes_from_the_environment_or_is_fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(evidence.SEED_ENV, "42")
    assert evidence.nemesis_seed() == 42
    monkeypatch.delenv(evidence.SEED_ENV)
    assert len({evidence.nemesis_seed() for _ in range(5)}) > 1
