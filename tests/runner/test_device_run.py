"""`fiolake run --device` on real loop devices: fio writes over the device it was handed,
the runs name it, and compare tells two block backends apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.runner.device_prep import prefill_budget_s
from fiolake.runner.host.lock import HostLock
from fiolake.units import human_bytes
from tests.runner.conftest import sql
from tests.runner.loopdev import (
    loop_device,
    reads_throttled,
    requires_loop,
    requires_throttle,
    sha256,
)

pytestmark = requires_loop

TRIM = "[t]\nrw=randtrim\nbs=64k\nsize=8m\nioengine=psync\nruntime=1\n"
SLOW_READ_IOPS = 3000  # the disk loop's cap: shm loops read at 50-300k IOPS here
WRITE = "[w]\nrw=write\nbs=1m\nioengine=psync\ndirect=1\nsize=4m\nruntime=5\n"


def run(*args: str | Path) -> str:
    result = CliRunner().invoke(cli, ["run", *map(str, args), "--share-host"])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_write_job_writes_the_device_it_was_handed(tmp_path: Path) -> None:
    (tmp_path / "w.fio").write_text(WRITE)
    with loop_device(tmp_path / "disk.img") as dev:
        subprocess.run(["mkfs.ext4", "-q", str(dev)], check=True)
        out = run(tmp_path / "w.fio", "--device", dev, "--destroy-data", "--wipe-signatures",
                  "--lake", tmp_path / "lake")  # fmt: skip
        assert f"wiped signature ext4 at 0x438 from {dev} (--wipe-signatures)" in out
        assert f"target {dev}: raw block device, 64.0 MiB, model loop: " in out
        with dev.open("rb") as f:
            written = f.read(4 * 2**20)
        os.close(os.open(dev, os.O_RDONLY | os.O_EXCL))  # the claim ended with the run
    (row,) = sql(tmp_path / "lake", "SELECT * FROM runs")
    assert (row["status"], row["target_kind"], row["device"]) == ("ok", "device", str(dev))
    assert row["device_size_bytes"] == 64 * 2**20 and row["device_logical_block_bytes"] == 512
    assert row["device_model"] == f"loop: {tmp_path / 'disk.img'}" and row["device_serial"] is None
    assert f"filename={dev}" in row["canonical_job_file"]
    assert "allow_file_create=0" in row["canonical_job_file"]
    assert written[1024 + 0x38 : 1024 + 0x3A] != b"\x53\xef"  # ext4's magic went with it
    assert not (tmp_path / "lake" / "dev").exists()


def test_randtrim_runs_on_a_device(tmp_path: Path) -> None:
    (tmp_path / "trim.fio").write_text(TRIM)
    with loop_device(Path("/dev/shm") / f"fiolake-test-{os.getpid()}.img") as dev:
        run(tmp_path / "trim.fio", "--device", dev, "--destroy-data", "--lake", tmp_path / "l")
    (row,) = sql(tmp_path / "l", "SELECT direction, io_bytes FROM results")
    assert row == {"direction": "trim", "io_bytes": 8 * 2**20}


MEASURED = "[m]\nrw=randread\nbs=4k\nsize=8m\nioengine=psync\nruntime=1\ntime_based=1\n"


@pytest.mark.slow  # purge, prefill, two measured runs and compare: ~7 s
def test_purge_and_prefill_run_first_linked_and_never_compared(tmp_path: Path) -> None:
    (tmp_path / "m.fio").write_text(MEASURED)
    lake = tmp_path / "lake"
    with loop_device(Path("/dev/shm") / f"fiolake-test-{os.getpid()}.img", 32 * 2**20) as dev:
        run(tmp_path / "m.fio", "--device", dev, "--destroy-data", "--purge", "--prefill",
            "--repeat", "2", "--lake", lake)  # fmt: skip
    columns = "run_id, role, status, device_start, purge_method, purged_by, prefilled_by"
    runs = sql(lake, f"SELECT {columns} FROM runs ORDER BY started_at, role DESC")
    purge, prefill, first, second = runs
    assert [(r["role"], r["device_start"]) for r in runs] == [
        ("purge", None),
        ("prefill", "purged"),
        ("measure", "prefilled"),
        ("measure", "used"),
    ]
    assert purge["purge_method"] == "discard" and {r["status"] for r in runs} == {"ok"}
    assert prefill["purged_by"] == purge["run_id"]
    for measured in (first, second):
        assert measured["purged_by"] == purge["run_id"]
        assert measured["prefilled_by"] == prefill["run_id"]
    (written,) = sql(lake, f"SELECT io_bytes FROM results WHERE run_id = '{prefill['run_id']}'")
    assert written["io_bytes"] == 2 * 32 * 2**20  # twice the device, by default
    (job,) = sql(lake, "SELECT canonical_job_file FROM runs WHERE role = 'prefill'")
    # Its own size and a budget from that size (the minimum, 60 s, for 32 MiB), not 3600 s.
    assert "size=33554432" in job["canonical_job_file"]
    assert "runtime=60" in job["canonical_job_file"] and "loops=2" in job["canonical_job_file"]
    compared = CliRunner().invoke(cli, ["compare", "--lake", str(lake), "--format", "json"])
    assert compared.exit_code == 0, compared.output
    assert {(r["profile"], r["n"]) for r in json.loads(compared.stdout)} == {("m", 2)}


def test_a_prefill_stopped_by_the_runtime_cap_fails_and_nothing_is_measured(
    tmp_path: Path,
) -> None:
    (tmp_path / "m.fio").write_text(MEASURED)
    lake = tmp_path / "lake"
    # 2 × 64 GiB onto an unallocated file through direct I/O: far more than 1 s of writes on
    # any disk (2 × 1 GiB was not: a fast CI disk prefilled it within the second). Sparse, so
    # only what the second writes takes space.
    size = 64 * 2**30
    with loop_device(tmp_path / "disk.img", size, sparse=True, direct_io=True) as dev:
        result = CliRunner().invoke(
            cli, ["run", str(tmp_path / "m.fio"), "--device", str(dev), "--destroy-data",
                  "--purge", "--prefill", "--max-runtime", "1", "--lake", str(lake),
                  "--share-host"],
        )  # fmt: skip
    runs = sql(lake, "SELECT run_id, role, status, flags, error, device_start FROM runs")
    assert [r["role"] for r in runs if r["role"] != "purge"] == ["prefill"]  # nothing measured
    (prefill,) = [r for r in runs if r["role"] == "prefill"]
    assert (prefill["status"], prefill["device_start"]) == ("failed", "purged")
    assert "cut-short" in prefill["flags"]
    (written,) = sql(lake, f"SELECT io_bytes FROM results WHERE run_id = '{prefill['run_id']}'")
    assert 0 < written["io_bytes"] < 2 * size
    why = (
        f"wrote {human_bytes(written['io_bytes'])} of 128.0 GiB (2 passes × 64.0 GiB) within "
        "its runtime of 1 s, so the device is not prefilled"
    )
    assert prefill["error"] == why
    assert result.exit_code == 1, result.output
    assert result.output.endswith(
        f"Error: prefill run {prefill['run_id']} failed: {why} — the measured runs did not "
        f"start; raise --max-runtime to {prefill_budget_s(size, 2)} (the prefill's budget) and "
        "run again\n"
    )


def test_the_purge_waits_for_the_host_lock(tmp_path: Path) -> None:
    (tmp_path / "m.fio").write_text(MEASURED)
    lake, lock_path = tmp_path / "lake", tmp_path / "host.lock"
    held = HostLock(lock_path, holder="another fio")
    assert held.acquire() is not None
    with loop_device(Path("/dev/shm") / f"fiolake-test-{os.getpid()}.img", 16 * 2**20) as dev:
        before = sha256(dev)
        argv = [sys.executable, "-m", "fiolake", "run", str(tmp_path / "m.fio"), "--device",
                str(dev), "--destroy-data", "--purge", "--host-lock", str(lock_path),
                "--lake", str(lake)]  # fmt: skip
        proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            waiting = next((line for line in proc.stderr if "waiting for the host" in line), "")
            # The first thing to wait is the purge, and it has not touched the device yet.
            assert waiting == "[device-purge] waiting for the host lock (held by another fio)\n"
            assert sha256(dev) == before
        finally:
            held.release()
            proc.communicate(timeout=120)
        assert proc.returncode == 0
        assert sha256(dev) != before  # purged once the lock was free
    (purge,) = sql(lake, "SELECT host_lock_wait_ms, flags FROM runs WHERE role = 'purge'")
    assert purge["host_lock_wait_ms"] > 0 and "shared-host" not in (purge["flags"] or [])


def test_purge_without_a_device_is_refused(tmp_path: Path) -> None:
    (tmp_path / "m.fio").write_text(MEASURED)
    result = CliRunner().invoke(
        cli, ["run", str(tmp_path / "m.fio"), "--dir", str(tmp_path), "--purge", "--prefill"]
    )
    assert result.exit_code == 2
    assert result.output.endswith(
        "Error: --purge, --prefill without --device — they apply to a raw block device only; "
        "drop them, or give --device PATH instead of --dir\n"
    )


@pytest.mark.slow  # 6 runs of random-reads, ~30 s
@requires_throttle  # the capped side is 15-100x slower: decided even beside busy workers
def test_shm_loop_against_disk_loop_compare_decides(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    shm = Path("/dev/shm") / f"fiolake-test-{os.getpid()}.img"
    # The disk loop bypasses the page cache (direct I/O on its file). This VM's disk
    # serves such reads from the host's cache as fast as /dev/shm (CI once measured the
    # disk loop 10 % faster), so its reads are also capped: slow by construction.
    with (
        loop_device(shm, 128 * 2**20) as fast,
        loop_device(tmp_path / "disk.img", 128 * 2**20, direct_io=True) as disk,
        reads_throttled(disk, SLOW_READ_IOPS) as slow,
    ):
        for backend, dev in (("shm-loop", fast), ("disk-loop", slow)):
            run("random-reads", "--device", dev, "--destroy-data", "--repeat", "3",
                "--runtime", "2", "--size", "64M", "--backend", backend, "--campaign",
                "c-loops", "--lake", lake)  # fmt: skip
        devices = {"shm-loop": fast, "disk-loop": slow}
    runs = sql(lake, "SELECT run_id, backend, device, device_model FROM runs")
    assert len(runs) == 6
    for r in runs:
        assert r["device"] == str(devices[r["backend"]])
        backing = shm if r["backend"] == "shm-loop" else tmp_path / "disk.img"
        assert r["device_model"] == f"loop: {backing}"
    one = {r["backend"]: r["run_id"] for r in runs}
    diff = CliRunner().invoke(cli, ["env-diff", "--lake", str(lake), "--run", one["shm-loop"],
                                    "--run", one["disk-loop"], "--format", "json"])  # fmt: skip
    assert diff.exit_code == 0, diff.output
    differs = {row["field"] for row in json.loads(diff.stdout)}
    assert {"device", "device_model", "target_dir"} <= differs, differs
    util = sql(lake, "SELECT r.backend, d.device FROM disk_util d JOIN runs r USING (run_id)")
    assert {(u["backend"], u["device"]) for u in util} == {(b, d.name) for b, d in devices.items()}
    (capped,) = sql(lake, "SELECT max(x.iops) AS top FROM results x JOIN runs r USING (run_id) "
                          "WHERE r.backend = 'disk-loop'")  # fmt: skip
    assert 0 < capped["top"] <= SLOW_READ_IOPS * 1.1  # the cap held: the premise is built
    compared = CliRunner().invoke(
        cli, ["compare", "--lake", str(lake), "--metric", "iops", "--baseline", "disk-loop",
              "--family", "metric", "--format", "json"],  # one question: IOPS
    )  # fmt: skip
    assert compared.exit_code == 0, compared.output
    (row,) = [r for r in json.loads(compared.stdout) if r["backend"] == "shm-loop"]
    assert row["verdict"] == "better", row
