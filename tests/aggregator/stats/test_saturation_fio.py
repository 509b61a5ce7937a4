"""IOPS at a latency SLO on real fio: a short open-loop rate_iops sweep (4 KiB random
reads, poisson arrivals, iodepth 32, O_DIRECT) on tmpfs against a disk directory, and on
tmpfs twice. tmpfs takes far more load within p50 ≤ 20 µs: the ratio's CI excludes 1
upwards; the same target twice is better or worse no more than chance allows.

The SLO is on the median: a disk's O_DIRECT round trip is tens of µs at any load, while
tmpfs answers in about a µs until its CPUs saturate (tens of thousands of IOPS here).
p99 on this shared VM's disk swung between 0.3 and 9 ms from run to run at every load
(tried), which makes a p99 SLO near 1 ms sometimes met everywhere and sometimes nowhere."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from tests.aggregator.stats.chance import beyond_chance
from tests.aggregator.stats.test_gate import run_campaign

LOADS = (250, 1000, 4000, 16000, 64000, 256000)
JOB = (
    "# a short latency-at-load for the test: 1 s per load\n"
    "[global]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=32\ndirect=1\n"
    "rate_process=poisson\nsize=32m\ntime_based=1\nruntime=1\nstonewall=1\n"
    + "".join(f"[load-{n}]\nrate_iops={n}\n" for n in LOADS)
)
SHM = Path("/dev/shm")
REPS = 3

pytestmark = [
    pytest.mark.slow,  # 9 runs of a 6-load sweep: ~90 s
    # Latency at load is what other work on the host changes most: beside three busy
    # workers (load 12) the same tmpfs came out 3.4x "better" at p99 <= 1 ms than itself.
    pytest.mark.alone,
    pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio"),
]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tmpfs, disk and tmpfs again, one run each in turn (so drift on a shared machine
    reaches every backend alike), three rounds."""
    if not SHM.is_dir():
        pytest.skip("needs /dev/shm (tmpfs)")
    root = tmp_path_factory.mktemp("saturation")
    job = root / "load-sweep.fio"
    job.write_text(JOB)
    lake = root / "lake"
    shm = SHM / f"fiolake-sat-{os.getpid()}-{root.name}"  # one per worker and session
    for _ in range(REPS):
        run_campaign(lake, job, shm, "sat", "tmpfs", repeat=1)
        run_campaign(lake, job, root / "disk", "sat", "disk", repeat=1)
        run_campaign(lake, job, shm, "sat", "tmpfs-again", repeat=1)
    return lake


def saturation(lake: Path, *args: str) -> list[dict[str, object]]:
    res = CliRunner().invoke(cli, ["saturation", "--lake", str(lake), "--format", "json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_tmpfs_takes_more_load_than_a_disk_within_the_slo(lake: Path) -> None:
    found = saturation(lake, "--backend", "tmpfs", "--backend", "disk", "--baseline", "disk",
                       "--slo", "p50<=20us")  # fmt: skip
    tmpfs = next(r for r in found if r["backend"] == "tmpfs")
    print("\n" + json.dumps([{k: r[k] for k in ("backend", "iops_at_slo", "status", "ci_low",
          "ci_high", "ratio", "ratio_ci_low", "ratio_ci_high", "verdict", "notes")}
          for r in found]))  # fmt: skip
    assert tmpfs["verdict"] == "better"
    assert isinstance(tmpfs["ratio_ci_low"], float) and tmpfs["ratio_ci_low"] > 1


@pytest.mark.parametrize("slo", ["p50<=20us", "p99<=1ms"])
def test_the_same_target_twice_differs_only_by_chance(lake: Path, slo: str) -> None:
    found = saturation(lake, "--backend", "tmpfs", "--backend", "tmpfs-again",
                       "--baseline", "tmpfs", "--slo", slo)  # fmt: skip
    again = next(r for r in found if r["backend"] == "tmpfs-again")
    print("\n" + slo + " " + json.dumps({k: again[k] for k in ("iops_at_slo", "status",
          "ratio", "ratio_ci_low", "ratio_ci_high", "p_adjusted", "verdict")}))  # fmt: skip
    # One target twice is the null hypothesis, so Welch's p is uniform: at alpha 0.05 a
    # `better` or `worse` comes by chance in one sweep of twenty per SLO (903d304's fresh-
    # clone run: tmpfs-again 0.884x [0.788, 0.991], worse). What this test must catch is a
    # gross systematic difference (another backend's runs pooled, a unit mixed up): that
    # drives p towards 0, where chance goes below 0.005 once in 200 sweeps. A subtle bias
    # is beyond one sweep of 3 runs a side (Welch on ~4 degrees of freedom): tmpfs-again's
    # IOPS scaled by 0.6 in the product came out at p 0.0012 once and 0.041 once. The
    # rate of chance verdicts is Welch's own (test_stats.py checks it against scipy).
    assert not beyond_chance([again]), again
