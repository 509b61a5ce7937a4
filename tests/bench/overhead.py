"""Benchmark: does running fio through `fiolake run` change what fio measures?

Runs the same short job as bare `fio` and through `fiolake run`, alternating,
5 pairs, and prints each pair's IOPS and the median ratio fiolake/bare
(goal >= 0.98). Not a test: a script that prints its figures.

    .venv/bin/python tests/bench/overhead.py [--pairs 5] [--runtime 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

JOB = """\
[overhead]
rw=randread
bs=4k
ioengine=psync
size=64M
runtime={runtime}
time_based=1
"""


def bare_fio(job: Path, target: Path, out: Path) -> float:
    text = job.read_text().replace("[overhead]", f"[overhead]\ndirectory={target}")
    bare = out / "bare.fio"
    bare.write_text(text)
    subprocess.run(
        ["fio", "--output-format=json", f"--output={out / 'bare.json'}", str(bare)],
        check=True,
        cwd=out,
    )
    report = json.loads((out / "bare.json").read_text())
    return sum(j["read"]["iops"] for j in report["jobs"])


def via_fiolake(job: Path, target: Path, lake: Path) -> float:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fiolake",
            "run",
            str(job),
            "--dir",
            str(target),
            "--lake",
            str(lake),
            "--format",
            "json",
            "--no-progress",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return sum(row["read_iops"] for row in json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--runtime", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fiolake-bench-", dir="/var/tmp") as tmp:
        root = Path(tmp)
        job = root / "overhead.fio"
        job.write_text(JOB.format(runtime=args.runtime))
        target = root / "target"
        target.mkdir()
        ratios = []
        print(f"{'pair':>4}  {'bare IOPS':>12}  {'fiolake IOPS':>12}  {'ratio':>6}")
        for i in range(args.pairs):
            # alternate the order so warm-up and drift hit both sides alike
            if i % 2 == 0:
                bare = bare_fio(job, target, root)
                lake = via_fiolake(job, target, root / "lake")
            else:
                lake = via_fiolake(job, target, root / "lake")
                bare = bare_fio(job, target, root)
            ratios.append(lake / bare)
            print(f"{i + 1:>4}  {bare:>12.0f}  {lake:>12.0f}  {lake / bare:>6.3f}")
        median = statistics.median(ratios)
        print(
            f"median IOPS ratio fiolake/bare over {args.pairs} pairs: {median:.3f} "
            f"(goal >= 0.98: {'met' if median >= 0.98 else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
