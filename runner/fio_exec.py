"""Run fio as a child process: clean environment, private output dir, watchdog, progress.

fio has no global wall-clock limit, so the watchdog sends SIGINT at the deadline
(fio then writes its JSON with partial counts) and SIGKILL after a grace period.
While fio runs this process only sleeps, reads fio's ETA line from the output
file for progress, and asks `should_stop` (a lost lease) once per tick.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from fiolake.errors import FioError

OUTPUT_NAME = "fio.json"

# fio writes its ETA line ("Jobs: 1 (f=1): [r(1)][40.0%][r=53.8MiB/s][r=13.8k IOPS][eta 00m:03s]")
# into the --output file, separated by carriage returns, before the JSON document.
_ETA = re.compile(r"Jobs: \d+[^\r\n{]*")


@dataclass(frozen=True)
class Progress:
    """One progress tick: elapsed and expected seconds plus fio's own ETA text."""

    elapsed_s: float
    expected_s: float
    eta_line: str | None


@dataclass(frozen=True)
class FioRun:
    """How a fio invocation ended."""

    argv: list[str]
    exit_code: int | None  # None when fio never started
    watchdog: str | None  # None, 'sigint', 'sigkill', 'lease-lost'
    started_at: datetime
    finished_at: datetime
    output_path: Path
    stderr: str

    @property
    def output_text(self) -> str:
        """fio's output file with the ETA lines removed ('' when absent)."""
        try:
            return strip_eta(self.output_path.read_text(errors="replace"))
        except FileNotFoundError:
            return ""


def strip_eta(text: str) -> str:
    """Drop fio's carriage-return ETA lines from its output text."""
    return _ETA.sub("", text).replace("\r", "")


def latest_eta(chunk: str) -> str | None:
    """The last complete ETA line in a chunk of fio's output file."""
    found = _ETA.findall(chunk)
    return found[-1].strip() if found else None


def clean_env(tmpdir: Path) -> dict[str, str]:
    """The whole environment fio sees: no secrets, no FIO_* or $-expansion inputs."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": str(tmpdir), "LC_ALL": "C"}


def run_fio(
    job_file: Path,
    outdir: Path,
    *,
    deadline_s: float,
    expected_s: float,
    grace_s: float = 10.0,
    fio: str = "fio",
    on_progress: Callable[[Progress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    tick_s: float = 1.0,
) -> FioRun:
    """Run fio on `job_file` with cwd=`outdir`; JSON lands in `outdir/fio.json`."""
    output = outdir / OUTPUT_NAME
    tmpdir = outdir / "tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    argv = [
        fio,
        "--output-format=json+",
        f"--output={output}",
        "--eta=always" if on_progress else "--eta=never",
        str(job_file),
    ]
    started = datetime.now(UTC)
    stderr_path = outdir / "fio.stderr"
    with open(stderr_path, "wb") as stderr_fh:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=outdir,
                env=clean_env(tmpdir),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr_fh,
                start_new_session=True,  # our Ctrl-C must not reach fio twice
            )
        except FileNotFoundError:
            raise FioError("fio not found on PATH: install it with `apt-get install fio`") from None
        watchdog = _supervise(
            proc, output, deadline_s, expected_s, grace_s, on_progress, should_stop, tick_s
        )
    finished = datetime.now(UTC)
    return FioRun(
        argv=argv,
        exit_code=proc.returncode,
        watchdog=watchdog,
        started_at=started,
        finished_at=finished,
        output_path=output,
        stderr=stderr_path.read_text(errors="replace"),
    )


def _supervise(
    proc: subprocess.Popen[bytes],
    output: Path,
    deadline_s: float,
    expected_s: float,
    grace_s: float,
    on_progress: Callable[[Progress], None] | None,
    should_stop: Callable[[], bool] | None,
    tick_s: float,
) -> str | None:
    start = time.monotonic()
    fired: str | None = None
    interrupted_at: float | None = None
    offset = 0
    try:
        while True:
            try:
                proc.wait(timeout=tick_s)
                return fired
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            elapsed = now - start
            if on_progress is not None:
                offset, eta = _read_eta(output, offset)
                on_progress(Progress(elapsed, expected_s, eta))
            if interrupted_at is None:
                if elapsed >= deadline_s:
                    fired = "sigint"
                elif should_stop is not None and should_stop():
                    fired = "lease-lost"
                if fired:
                    proc.send_signal(signal.SIGINT)
                    interrupted_at = now
            elif now - interrupted_at >= grace_s:
                proc.kill()
                fired = "sigkill" if fired == "sigint" else fired
                proc.wait()
                return fired
    except BaseException:
        # KeyboardInterrupt or a crash of ours: never leave fio running unattended.
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise


def _read_eta(output: Path, offset: int) -> tuple[int, str | None]:
    try:
        with open(output, "rb") as fh:
            fh.seek(offset)
            chunk = fh.read(64 * 1024)
    except FileNotFoundError:
        return offset, None
    return offset + len(chunk), latest_eta(chunk.decode(errors="replace"))


def deadline_for(expected_s: float) -> float:
    """Watchdog deadline: generous over the expected time, since laying out files takes time."""
    return expected_s * 1.5 + 60.0
