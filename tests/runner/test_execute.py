"""runner.execute without the CLI: a target the runner cannot use is a failed run, not a crash."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fiolake.runner import execute as ex

JOB = "[r]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"


def test_unwritable_target_is_recorded_as_a_failed_run(tmp_path: Path) -> None:
    target = tmp_path / "ro"
    target.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(target)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs: {mounted.stderr.decode().strip()}")
    try:
        request = ex.RunRequest(
            job_file_text=JOB,
            profile="r",
            backend="ro",
            target_dir=target,
            job_id="j-1",
            campaign_id="c-1",
        )
        outcome = ex.execute(ex.prepare(request))
    finally:
        subprocess.run(["umount", str(target)], check=False)
    assert outcome.status == "failed"
    assert outcome.error.startswith(f"cannot create fio's directory in {target}: ")
    assert "Read-only file system" in outcome.error
    [row] = outcome.tables["runs"].to_pylist()
    assert row["status"] == "failed" and row["job_id"] == "j-1" and row["backend"] == "ro"
    assert outcome.tables["results"].num_rows == 0
