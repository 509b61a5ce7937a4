"""runner.execute without the CLI: a target the runner cannot use is a failed run, not a crash."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fiolake.runner import attempt
from fiolake.runner import execute as ex
from fiolake.stack.process import pid_alive

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
        outcome = ex.execute(attempt.prepare(request).measured)
    finally:
        subprocess.run(["umount", str(target)], check=False)
    assert outcome.status == "failed"
    assert outcome.error.startswith(f"cannot create fio's directory in {target}: ")
    assert "Read-only file system" in outcome.error
    [row] = outcome.tables["runs"].to_pylist()
    assert row["status"] == "failed" and row["job_id"] == "j-1" and row["backend"] == "ro"
    assert outcome.tables["results"].num_rows == 0


def test_the_version_recorded_is_that_of_the_fio_that_ran(tmp_path: Path) -> None:
    """A fio earlier on PATH than the system's wins everywhere: the run, --parse-only and
    the version record all use the binary find_fio resolved, and its path is recorded."""
    shim_dir = tmp_path / "bin"
    shim_dir.mkdir()
    calls = tmp_path / "calls.log"
    shim = shim_dir / "fio"
    shim.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {calls}\n'
        'if [ "$1" = --version ]; then echo fio-9.99-shim; exit 0; fi\n'
        'exec /usr/bin/fio "$@"\n'
    )
    shim.chmod(0o755)
    target = tmp_path / "target"
    target.mkdir()
    request = ex.RunRequest(JOB, "r", "b", target, "j-2", "c-2")
    outcome = ex.execute(attempt.prepare(request, fio=str(shim)).measured, fio=str(shim))
    [row] = outcome.tables["runs"].to_pylist()
    assert outcome.status == "ok", outcome.error
    assert row["fio_version"] == "fio-9.99-shim"
    assert row["fio_path"] == str(shim)
    logged = calls.read_text().splitlines()
    assert any(line.startswith("--parse-only") for line in logged)
    assert any(line.startswith("--output-format=json+") for line in logged)


def _steady_run(tmp_path: Path, runtime: int, ramp: int = 0) -> dict:
    job = (
        "[ss]\nioengine=null\nrw=randread\nbs=4k\nsize=1G\nrate_iops=2000\ntime_based=1\n"
        f"runtime={runtime}\nsteadystate=iops:10%\nsteadystate_duration=3\n"
        f"steadystate_ramp_time={ramp}\n"
    )
    request = ex.RunRequest(
        job_file_text=job,
        profile="ss",
        backend="null",
        target_dir=tmp_path,
        job_id="j-ss",
        campaign_id="c-ss",
    )
    outcome = ex.execute(attempt.prepare(request).measured)
    assert outcome.status == "ok", outcome.error
    [row] = outcome.tables["results"].to_pylist()
    return row


@pytest.mark.slow  # waits out fio's steadystate window: ~10 s of fio timers
def test_fios_own_steadystate_verdict_is_recorded(tmp_path: Path) -> None:
    """A rate-limited job attains fio's `steadystate=iops:10%` within its 3 s window and
    ends early; one whose steadystate ramp outlasts its runtime is never judged, so not
    attained — fio's verdict, not fiolake's (whose 5 s window calls a 4 s run unknown)."""
    attained = _steady_run(tmp_path, 15)
    assert attained["steady_state"] is True
    assert attained["job_runtime_ms"] < 10_000  # fio stopped it once steady
    assert attained["warmup_s"] == max(0, round(attained["job_runtime_ms"] / 1000 - 3))
    missed = _steady_run(tmp_path, 4, ramp=10)
    assert missed["steady_state"] is False and missed["warmup_s"] is None


def test_a_fio_that_does_not_answer_its_version_is_a_clean_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in the soak: `fio --version` outlived its timeout on a loaded machine (the
    runner was stopped meanwhile) and TimeoutExpired killed the runner. Now a FioError the
    runner's loop logs and retries; nothing is cached, so the next call asks again."""
    from fiolake.errors import FioError
    from fiolake.runner.fio import binary

    slow, hang, child = tmp_path / "fio", tmp_path / "hang", tmp_path / "child"
    hang.touch()
    slow.write_text(
        f"#!/bin/sh\n[ -e {hang} ] && {{ sleep 5 & echo $! > {child}; wait; }}\n"
        "echo fio-9.99-slow\n"
    )
    slow.chmod(0o755)
    monkeypatch.setattr(binary, "VERSION_TIMEOUT_S", 0.2)
    with pytest.raises(FioError) as exc:
        binary.find_fio(str(slow))
    assert str(exc.value) == (
        f"`{slow} --version` did not answer within 0.2 s — the machine is overloaded or "
        "fio hangs; try again"
    )
    # the stub's `sleep` went with it: a wrapper script leaves no child behind (the
    # session's hygiene check found one left in make test-fast)
    assert not pid_alive(int(child.read_text()))
    hang.unlink()  # it answers now
    monkeypatch.setattr(binary, "VERSION_TIMEOUT_S", 30.0)
    assert binary.find_fio(str(slow)).version == "fio-9.99-slow"
