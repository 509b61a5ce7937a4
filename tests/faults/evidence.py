"""What a failed history test leaves behind: its evidence and how to run it again.

The history test runs in a temporary directory that pytest (or the soak) cleans up, so
a failure copies the runners' histories and logs, the publisher's history and the lake
listing to `build/test-artifacts/faults/<test>/`, and names that path and a one-line
reproduction with the nemesis seed in the failure message.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "test-artifacts" / "faults"
SEED_ENV = "FIOLAKE_NEMESIS_SEED"
# The files of a history test's directory worth keeping (the stack's data is not).
KEPT = ("*.jsonl", "*.log", "*.txt", "r*/*.jsonl", "r*/*.log", "r*/spool/**/*")


def nemesis_seed() -> int:
    """The seed of this run's fault schedule: FIOLAKE_NEMESIS_SEED, or a fresh one."""
    value = os.environ.get(SEED_ENV)
    return int(value) if value else random.SystemRandom().randrange(1 << 32)


def keep_evidence(root: Path, test: str) -> Path:
    """Copy the evidence under `root` to the artifacts directory of `test`; its path."""
    dest = ARTIFACTS / test
    shutil.rmtree(dest, ignore_errors=True)
    for pattern in KEPT:
        for path in root.glob(pattern):
            if path.is_file():
                target = dest / path.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
    dest.mkdir(parents=True, exist_ok=True)
    return dest


def failure_message(problems: list[str], evidence: Path, seed: int, rerun: str) -> str:
    """The failure: each problem, where its evidence is, and one line to run it again."""
    lines = [*problems[:20]]
    if len(problems) > 20:
        lines.append(f"... and {len(problems) - 20} more")
    lines.append(f"evidence: {evidence}")
    lines.append(f"reproduce: {SEED_ENV}={seed} {rerun}")
    return "\n".join(lines)
