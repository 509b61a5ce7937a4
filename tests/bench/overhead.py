"""Benchmark: does running fio through `fiolake run` change what fio measures?

Two figures, both measured in this run (goals in brackets):
  1. fiolake's own CPU time while fio runs ÷ fio's wall time, from /proc/<pid>/stat
     (10 ms ticks, hence a run of >= 60 s)                                   [<= 0.5 %]
  2. the same short job as bare `fio` and through `fiolake run`, alternating pairs, until
     the bootstrap 95 % CI of the median IOPS ratio fiolake/bare is within ±1 % (or
     --max-pairs); prints each pair, the median, the CI and how many pairs it took.
Not a test: a script that prints its figures.

    .venv/bin/python -m tests.bench.overhead [--cpu-runtime 60] [--runtime 5] [--max-pairs 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

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
            "--create-dir",
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


TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads, not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


def fio_child(parent: int) -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            name, rest = stat.split("(", 1)[1].rsplit(")", 1)
            if name == "fio" and int(rest.split()[1]) == parent:
                try:  # the measured run, not `fio --version` or `fio --parse-only`
                    argv = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"--output-format=json+" in argv:
                    return int(entry.name)
    return None


def cpu_share(job: Path, target: Path, lake: Path) -> tuple[float, float]:
    """(fiolake's CPU seconds while fio ran, fio's wall seconds) for one `fiolake run`."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "fiolake", "run", str(job), "--create-dir", "--dir", str(target),
         "--lake", str(lake), "--format", "json", "--no-progress"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    fio = None
    while fio is None and proc.poll() is None:
        fio = fio_child(proc.pid)
        time.sleep(0.01)
    if fio is None:
        raise SystemExit("fio never started under fiolake run")
    cpu_before, started = cpu_seconds(proc.pid), time.perf_counter()
    while Path(f"/proc/{fio}").exists() and fio_child(proc.pid) == fio:
        time.sleep(0.05)
    cpu_after, ended = cpu_seconds(proc.pid), time.perf_counter()
    proc.wait()
    return cpu_after - cpu_before, ended - started


def median_ci(ratios: list[float]) -> tuple[float, float]:
    res = stats.bootstrap(
        (np.array(ratios),), np.median, confidence_level=0.95, n_resamples=2000,
        method="percentile", random_state=np.random.default_rng(1),
    )  # fmt: skip
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-runtime", type=int, default=60)
    parser.add_argument("--runtime", type=int, default=5)
    parser.add_argument("--min-pairs", type=int, default=5)
    parser.add_argument("--max-pairs", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fiolake-bench-", dir="/var/tmp") as tmp:
        root = Path(tmp)
        target = root / "target"
        target.mkdir()
        long_job = root / "overhead-long.fio"
        long_job.write_text(JOB.format(runtime=args.cpu_runtime))
        cpu, wall = cpu_share(long_job, target, root / "lake")
        share = cpu / wall
        print(
            f"fiolake CPU while fio ran: {cpu:.2f} s over {wall:.1f} s of fio = {share:.3%} "
            f"(goal <= 0.5 %: {'met' if share <= 0.005 else 'NOT met'}; 10 ms ticks)",
            flush=True,
        )
        job = root / "overhead.fio"
        job.write_text(JOB.format(runtime=args.runtime))
        ratios: list[float] = []
        print(f"{'pair':>4}  {'bare IOPS':>12}  {'fiolake IOPS':>12}  {'ratio':>6}")
        for i in range(args.max_pairs):
            # alternate the order so warm-up and drift hit both sides alike
            if i % 2 == 0:
                bare = bare_fio(job, target, root)
                lake = via_fiolake(job, target, root / "lake")
            else:
                lake = via_fiolake(job, target, root / "lake")
                bare = bare_fio(job, target, root)
            ratios.append(lake / bare)
            print(f"{i + 1:>4}  {bare:>12.0f}  {lake:>12.0f}  {lake / bare:>6.3f}", flush=True)
            if len(ratios) >= args.min_pairs:
                low, high = median_ci(ratios)
                if high - low <= 0.02:
                    break
        median = statistics.median(ratios)
        low, high = median_ci(ratios)
        print(
            f"median IOPS ratio fiolake/bare over {len(ratios)} pairs: {median:.3f}, bootstrap "
            f"95 % CI [{low:.3f}, {high:.3f}] (target width ±1 %: "
            f"{'reached' if high - low <= 0.02 else 'NOT reached'} after {len(ratios)} pairs)"
        )


if __name__ == "__main__":
    main()
