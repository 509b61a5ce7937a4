"""Gate false alarms and power on this machine (issue 34; a script, not a test).

    .venv/bin/python -m tests.bench.gate_aa [--nights 9] [--reps 3] [--runtime 2]

1. A/A: N nights of one short fsync-heavy 4 KiB write job on the same tmpfs target (real
   fio, `fiolake run`), two CPU hogs (`python -c 'while 1: pass'`) running through every
   `--hog-every`-th night. From the second night on, each night is gated against the night
   before (`--baseline-campaign`), against a `since:7d` pool, and with the default baseline
   (the night-to-night model over the earlier nights): false `worse` per decision (exit 1).
2. Slowdowns: in a copy of that lake, a night throttled to a known fraction of the A/A
   rate — the fio process tree under a cgroup (v1) CPU quota of that fraction of the CPU
   fio used in the A/A nights (fsync on tmpfs is CPU-bound), the realised ratio printed —
   and one night on a disk directory under the same backend name; each gated with the
   default baseline and with since:7d: detected = exit 1.
3. Simulation: the within-night (σ) and between-night (τ) spreads of iops measured in
   step 1, then 1,000 A/A decisions and 1,000 with a 15 % drop per recipe (repetitions ×
   nights of history), decided by the gate's night model (`stats.nights`) at the α the
   iops row faces in the default gate (Holm's first step over 3 tests).

Prints the tables; BENCHMARKS.md keeps them (docs/ci.md has the recommended recipe).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path[0] = str(Path(__file__).resolve().parents[2])

import numpy as np

from fiolake.aggregator.lake.lake import open_lake
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats import nights, stats
from fiolake.aggregator.stats.runsets import summarise

JOB = """[syncwrite-4k]
rw=randwrite
bs=4k
fsync=1
ioengine=psync
size=4m
time_based=1
runtime={runtime}
"""
SHM = Path("/dev/shm")
CGROUP = Path("/sys/fs/cgroup/cpu")
BACKEND = "tmpfs"
PERIOD_US = 100_000


def fiolake(*args: str, cgroup: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m fiolake ARGS`, inside `cgroup` (its cgroup.procs) when given."""
    argv = [sys.executable, "-m", "fiolake", *args]
    if cgroup is not None:
        argv = ["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@contextlib.contextmanager
def hogs(count: int) -> Iterator[None]:
    """`count` CPU hogs for the duration (killed by their own pids afterwards)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


@contextlib.contextmanager
def cpu_quota(fraction: float) -> Iterator[Path | None]:
    """A cgroup v1 `cpu` group capped at `fraction` of one core (None when unavailable)."""
    group = CGROUP / f"fiolake-bench-{os.getpid()}"
    try:
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(int(fraction * PERIOD_US)))
    except OSError as err:
        print(f"  (no cgroup CPU quota here: {err})", file=sys.stderr)
        yield None
        return
    try:
        yield group
    finally:
        for _ in range(50):  # the processes have exited; the group empties shortly after
            with contextlib.suppress(OSError):
                group.rmdir()
                break
            time.sleep(0.1)


def night(lake: Path, job: Path, name: str, reps: int, target: Path | None = None,
          cgroup: Path | None = None) -> None:  # fmt: skip
    """One campaign of `reps` runs of `job` on tmpfs (or `target`), backend tmpfs."""
    where = target or SHM / f"fiolake-bench-{os.getpid()}"
    try:
        res = fiolake("run", str(job), "--dir", str(where), "--create-dir", "--backend",
                      BACKEND, "--lake", str(lake), "--repeat", str(reps), "--campaign",
                      name, "--format", "csv", cgroup=cgroup)  # fmt: skip
        if res.returncode != 0:
            raise SystemExit(f"fiolake run failed: {res.stderr}")
    finally:
        shutil.rmtree(where, ignore_errors=True)


def gate(lake: Path, name: str, *baseline: str) -> tuple[int, dict[str, str]]:
    """Exit code and metric -> verdict of `fiolake gate` on `name`."""
    res = fiolake("gate", "--lake", str(lake), "--campaign", name, "--format", "json",
                  *baseline)  # fmt: skip
    if res.returncode == 2:
        raise SystemExit(f"gate failed: {res.stderr}")
    rows = json.loads(res.stdout)["rows"]
    return res.returncode, {r["metric"]: r["verdict"] for r in rows}


def spreads(lake: Path, names: list[str]) -> tuple[float, float, float]:
    """σ (within a night), τ (between nights) of log iops over `names`, and the mean."""
    with open_lake(str(lake)) as handle:
        data, _ = summarise(handle, "CAST(r.campaign_id AS VARCHAR)",
                            RunFilter(campaigns=tuple(names)), ["iops"])  # fmt: skip
    logs = [g["iops"].log for (_, _), g in sorted(data.items()) if g["iops"].log]
    within = sum((s.n - 1) * (s.var or 0.0) for s in logs) / sum(s.n - 1 for s in logs)
    means = np.array([s.mean for s in logs])
    n = float(np.mean([s.n for s in logs]))
    tau2 = max(0.0, float(np.var(means, ddof=1)) - within / n)
    return math.sqrt(within), math.sqrt(tau2), float(np.mean(means))


def simulate(sigma: float, tau: float, reps: int, history: int, drop: float,
             trials: int, rng: np.random.Generator, alpha: float) -> float:  # fmt: skip
    """Share of `trials` the night model calls worse (iops lower, beyond ±5 %)."""
    worse = 0
    for _ in range(trials):
        summaries = []
        for k in range(history + 1):
            shift = math.log1p(-drop) if k == history else 0.0
            x = shift + rng.normal(0, tau) + rng.normal(0, sigma, reps)
            summaries.append(stats.LogSummary(reps, float(x.mean()), float(x.var(ddof=1))))
        m = nights.night_model(summaries[-1], summaries[:-1], stats.DEFAULT_MIN_EFFECT)
        if m.p_value is not None and m.p_value < alpha and m.ratio is not None:
            worse += m.ratio < 1 / (1 + stats.DEFAULT_MIN_EFFECT)
    return worse / trials


def aa_nights(args: argparse.Namespace, lake: Path, job: Path) -> list[str]:
    """Step 1: the A/A nights, each gated three ways; prints the false-worse table."""
    names: list[str] = []
    decisions: dict[str, list[tuple[int, bool]]] = {"night before": [], "since:7d": [],
                                                    "default (nights)": []}  # fmt: skip
    for i in range(1, args.nights + 1):
        name, hogged = f"aa-{i:02d}", i % args.hog_every == 0
        with hogs(2) if hogged else contextlib.nullcontext():
            night(lake, job, name, args.reps)
        if names:
            for kind, baseline in (("night before", ("--baseline-campaign", names[-1])),
                                   ("since:7d", ("--baseline-runs", "since:7d")),
                                   ("default (nights)", ())):  # fmt: skip
                code, _ = gate(lake, name, *baseline)
                decisions[kind].append((code, hogged))
        names.append(name)
        print(f"  night {name}{' (2 CPU hogs)' if hogged else ''} done", file=sys.stderr)
    print(
        f"\nA/A: {args.nights} nights × {args.reps} runs × {args.runtime} s, syncwrite-4k on "
        f"tmpfs, 2 CPU hogs in every {args.hog_every}rd night"
    )
    print(f"{'baseline':<18} {'decisions':>9} {'exit 1':>7} {'in hogged nights':>17}")
    for kind, got in decisions.items():
        bad = sum(c == 1 for c, _ in got)
        print(f"{kind:<18} {len(got):>9} {bad:>7} {sum(h for _, h in got):>17}")
    return names


def fio_cpu(lake: Path) -> float:
    """fio's median CPU use over the A/A runs, as a fraction of one core (usr + sys)."""
    with open_lake(str(lake)) as handle:
        (share,) = (
            handle.cursor()
            .execute("SELECT median(usr_cpu + sys_cpu) / 100 FROM results")
            .fetchone()
        )
    return float(share)


def slowdowns(args: argparse.Namespace, root: Path, lake: Path, job: Path, centre: float) -> None:
    """Step 2: throttled nights and a disk night, each in a copy of the A/A lake. The
    throttle is a CPU quota at a fraction of the CPU fio used in the A/A nights (fsync on
    tmpfs is CPU-bound; on a shared machine fio gets well under a core, so a quota of a
    fraction of a whole core would not bind)."""
    share = fio_cpu(lake)
    print(f"\nSlowdowns (each night in a copy of the A/A lake; fio used {share:.0%} of a core)")
    print(f"{'night':<28} {'ratio':>6} {'default':>8} {'since:7d':>9}")
    disk: list[tuple[str, float | None]] = [("disk dir (same backend)", None)]
    cases = [(f"CPU quota {f:.0%} of fio's", f) for f in args.throttle
             for _ in range(args.throttled_nights)] + disk  # fmt: skip
    for k, (what, fraction) in enumerate(cases):
        copy = root / f"lake-{k}"
        shutil.copytree(lake, copy)
        name = f"slow-{k:02d}"
        if fraction is None:
            night(copy, job, name, args.reps, target=Path(tempfile.mkdtemp(dir="/var/tmp")))
        else:
            with cpu_quota(fraction * share) as group:
                if group is None:
                    continue
                night(copy, job, name, args.reps, cgroup=group)
        with open_lake(str(copy)) as handle:
            data, _ = summarise(handle, "CAST(r.campaign_id AS VARCHAR)",
                                RunFilter(campaign=name), ["iops"])  # fmt: skip
        log = next(iter(data.values()))["iops"].log
        ratio = math.exp(log.mean - centre) if log else float("nan")
        found = [gate(copy, name)[0], gate(copy, name, "--baseline-runs", "since:7d")[0]]
        print(
            f"{what:<28} {ratio:>6.2f} {'worse' if found[0] == 1 else 'missed':>8} "
            f"{'worse' if found[1] == 1 else 'missed':>9}"
        )
        shutil.rmtree(copy)


def simulation(sigma: float, tau: float, trials: int) -> None:
    """Step 3: the night model's false worse and power per recipe at these spreads."""
    rng = np.random.default_rng(34)
    alpha = stats.ALPHA / 3
    print(
        f"\nSimulation at σ = {sigma:.3f}, τ = {tau:.3f}: {trials} decisions each, "
        f"night model at α = {alpha:.3f} (Holm's first step over 3 tests)"
    )
    print(f"{'runs/night':>10} {'nights':>6} {'false worse':>12} {'15 % drop found':>16}")
    for reps, history in ((3, 3), (3, 7), (5, 7), (5, 10), (10, 10)):
        false = simulate(sigma, tau, reps, history, 0.0, trials, rng, alpha)
        power = simulate(sigma, tau, reps, history, 0.15, trials, rng, alpha)
        print(f"{reps:>10} {history:>6} {false:>12.1%} {power:>16.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--nights", type=int, default=9, help="A/A nights (default 9)")
    ap.add_argument("--reps", type=int, default=3, help="runs per night (default 3)")
    ap.add_argument("--runtime", type=int, default=2, help="seconds per run (default 2)")
    ap.add_argument("--hog-every", type=int, default=3, help="hogged night period (3)")
    ap.add_argument(
        "--throttle",
        type=float,
        nargs="*",
        default=[0.85, 0.90],
        help="CPU quota fractions of one core for slowed nights (0.85 0.90)",
    )
    ap.add_argument("--throttled-nights", type=int, default=2, help="nights per fraction")
    ap.add_argument("--trials", type=int, default=1000, help="simulated decisions (1000)")
    ap.add_argument("--keep", action="store_true", help="keep the lake and print where")
    args = ap.parse_args()
    if shutil.which("fio") is None or not SHM.is_dir():
        raise SystemExit("needs fio and /dev/shm")
    root = Path(tempfile.mkdtemp(prefix="fiolake-gate-aa-"))
    job = root / "syncwrite-4k.fio"
    job.write_text(JOB.format(runtime=args.runtime))
    lake = root / "lake"
    started = time.monotonic()
    subprocess.run(["fio", f"--directory={SHM}", "--filename=fiolake-bench-warmup",
                    str(job)], capture_output=True, check=True)  # fmt: skip
    (SHM / "fiolake-bench-warmup").unlink(missing_ok=True)
    names = aa_nights(args, lake, job)
    sigma, tau, centre = spreads(lake, names)
    quiet = [n for i, n in enumerate(names, 1) if i % args.hog_every]
    q_sigma, q_tau, _ = spreads(lake, quiet)
    print(
        f"spreads of log iops: within a night σ = {sigma:.3f}, between nights τ = {tau:.3f}"
        f" ({math.exp(centre):,.0f} IOPS); quiet nights only σ = {q_sigma:.3f}, "
        f"τ = {q_tau:.3f}"
    )
    slowdowns(args, root, lake, job, centre)
    simulation(sigma, tau, args.trials)
    if (q_sigma, q_tau) != (sigma, tau):
        simulation(q_sigma, q_tau, args.trials)
    print(f"\n{time.monotonic() - started:.0f} s" + (f"; lake kept at {lake}" if args.keep else ""))
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
