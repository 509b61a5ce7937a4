"""The runner image benchmarks a raw block device handed to it with `podman --device` and
nothing else: uid 10001, no capabilities, a read-only root, no new privileges; the device
reaches it through the `disk` group (gid 6), as udev leaves real disks (root:disk 0660)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.container.conftest import podman
from tests.runner.loopdev import loop_device, requires_loop

IMAGE = "fiolake-runner:local"
JOB = "[m]\nrw=randwrite\nbs=4k\nsize=16m\nioengine=psync\ndirect=1\nruntime=1\ntime_based=1\n"
READ_RUNS = (
    "import glob, pyarrow.parquet as pq\n"
    "for f in sorted(glob.glob('/bench/lake/**/runs/**/*.parquet', recursive=True)):\n"
    "    for r in pq.read_table(f).to_pylist():\n"
    "        print(r['role'], r['status'], r['target_kind'], r['device'], r['purge_method'])\n"
)


@requires_loop
def test_the_runner_image_benchmarks_a_device_passed_with_podman_device(
    images: float, tmp_path: Path
) -> None:
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "m.fio").write_text(JOB)
    (bench / "runs.py").write_text(READ_RUNS)
    shutil.chown(bench, 10001, 10001)
    with loop_device(Path("/dev/shm") / f"fiolake-ctr-{os.getpid()}.img") as dev:
        mode = os.stat(dev)
        os.chown(dev, 0, 6)  # as udev leaves a disk: root:disk 0660
        os.chmod(dev, 0o660)
        try:
            out = podman(
                "run", "--rm", "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL",
                "--security-opt", "no-new-privileges", "--device", str(dev),
                "--group-add", "6", "-v", f"{bench}:/bench", "--entrypoint", "sh", IMAGE, "-c",
                f"cd /tmp && fiolake run /bench/m.fio --device {dev} --destroy-data --purge "
                "--lake /bench/lake --host-lock /tmp/host.lock --format csv >/dev/null "
                "&& python3 /bench/runs.py",
                timeout=300,
            )  # fmt: skip
        finally:
            os.chown(dev, mode.st_uid, mode.st_gid)
            os.chmod(dev, mode.st_mode & 0o7777)
    assert sorted(out.split("\n")[:-1]) == [
        f"measure ok device {dev} None",
        f"purge ok device {dev} discard",
    ]
