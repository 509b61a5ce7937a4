"""Run fio as a child process: clean environment, private output dir, watchdog, progress.

fio has no global wall-clock limit, so the watchdog sends SIGINT at the deadline
(fio then writes its JSON with partial counts) and SIGKILL after a grace period.
While fio runs this process only sleeps, reads fio's ETA line from the output
file for progress, and asks `should_stop` (a lost lease) once per tick.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from fiolake.children import kill_group, reap, stat_fields
from fiolake.errors import FioError
from fiolake.runner.fio.binary import FIO_INSTALL_HINT, locate

log = logging.getLogger("fiolake.runner")

OUTPUT_NAME = "fio.json"

# With --eta=always fio prints its ETA line once a second to stdout, ended by a carriage
# return ("Jobs: 1 (f=1): [r(1)][40.0%][r=53.8MiB/s][r=13.8k IOPS][eta 00m:03s]").
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
        """fio's --output file ('' when fio never wrote it)."""
        try:
            return self.output_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""


class _EtaReader(threading.Thread):
    """Drains fio's stdout pipe (so fio never blocks on it) and keeps the newest ETA line."""

    def __init__(self, pipe: IO[bytes], on_line: Callable[[str], None]):
        super().__init__(daemon=True, name="fio-eta")
        self.pipe = pipe
        self.on_line = on_line
        self.other: list[str] = []  # anything on stdout that is not an ETA line

    def run(self) -> None:
        pending = ""
        # One read of what the pipe holds (as BufferedReader.read1; IO[bytes] lacks it).
        while chunk := os.read(self.pipe.fileno(), 4096):
            pending += chunk.decode(errors="replace")
            *complete, pending = re.split(r"[\r\n]", pending)
            for line in complete:
                if _ETA.match(line):
                    self.on_line(line.strip())
                elif line.strip():
                    self.other.append(line)


def _throttled(on_progress: Callable[[Progress], None], expected_s: float) -> Callable[[str], None]:
    """Report an ETA line unless it repeats the last one within a second (fio's layout phase)."""
    started = time.monotonic()
    last: list[tuple[str, float]] = [("", -1.0)]

    def report(line: str) -> None:
        now = time.monotonic() - started
        if line == last[0][0] and now - last[0][1] < 1.0:
            return
        last[0] = (line, now)
        on_progress(Progress(now, expected_s, line))

    return report


def _dying_with_parent(argv: list[str], path: str) -> list[str]:
    """`argv` (its program found on `path`) started by util-linux's setpriv, which sets
    PR_SET_PDEATHSIG and execs it: fio gets SIGTERM when the thread that started it dies,
    however it dies. SIGTERM, not SIGKILL: fio then stops its job processes and exits.

    Not a preexec_fn: CPython runs that between fork and exec, which in a threaded runner
    (heartbeat, gang watcher) can deadlock the child before fio starts, and Popen waits on
    it for ever (CI: a gang member's child stuck in a lock libfaketime held at the fork,
    while its heartbeat kept the slot alive; the Python docs call preexec_fn unsafe with
    threads). Without setpriv (util-linux < 2.33) fio starts as it is; the watchdog still
    bounds it while this process lives. FioError when the program is not found.
    """
    program = locate(argv[0], path)  # absolute: fio starts in its output directory
    if program is None:
        raise FioError(f"cannot start {argv[0]}: not found or not executable — {FIO_INSTALL_HINT}")
    setpriv = _setpriv()
    if setpriv is None:
        return [program, *argv[1:]]
    return [setpriv, "--pdeathsig", "TERM", "--", program, *argv[1:]]


@functools.cache
def _setpriv() -> str | None:
    found = shutil.which("setpriv")
    if found is None:
        log.warning("setpriv (util-linux) not found: fio will not stop if fiolake is killed")
    return found


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
    should_stop: Callable[[], bool | str | None] | None = None,
    tick_s: float = 1.0,
    before_start: Callable[[], None] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> FioRun:
    """Run fio on `job_file` with cwd=`outdir`; JSON lands in `outdir/fio.json`.

    `pass_fds` stay open in fio (the host lock: held until fio too has exited).

    `should_stop` is asked once per tick: True (a lost lease) or a reason such as
    'interrupted' stops fio with SIGINT and becomes FioRun.watchdog. fio dies with the
    thread that started it (PR_SET_PDEATHSIG), so it never outlives fiolake.
    `before_start` runs last before fio is started (a gang member waits there for the
    gang's start instant), so `started_at` is when fio really started.
    """
    output = outdir / OUTPUT_NAME
    tmpdir = outdir / "tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    # json+ (the latency bins); --output, never a pipe (fio may write text before the JSON).
    eta_flag = "--eta=always" if on_progress else "--eta=never"
    argv = [fio, "--output-format=json+", f"--output={output}", eta_flag, str(job_file)]
    if before_start is not None:
        before_start()
    started = datetime.now(UTC)
    stderr_path = outdir / "fio.stderr"
    with open(stderr_path, "wb") as stderr_fh:
        proc = _start(
            argv, outdir, tmpdir, stderr_fh, piped=on_progress is not None, pass_fds=pass_fds
        )
        eta = None
        if proc.stdout is not None and on_progress is not None:
            # One progress line per ETA line, at fio's own once-a-second cadence.
            eta = _EtaReader(proc.stdout, _throttled(on_progress, expected_s))
            eta.start()
        try:
            watchdog = _supervise(proc, deadline_s, grace_s, should_stop, tick_s)
        finally:
            # Also when an interrupt is on its way up: the caller next releases the
            # device and the host lock, which a job process must not outlive.
            if proc.returncode is not None and proc.returncode < 0:
                end_job_processes(outdir)  # fio was killed: its job processes may not be
        if eta is not None:
            eta.join(timeout=5)
    finished = datetime.now(UTC)
    console = "\n".join(eta.other) + "\n" if eta is not None and eta.other else ""
    return FioRun(
        argv=argv,
        exit_code=proc.returncode,
        watchdog=watchdog,
        started_at=started,
        finished_at=finished,
        output_path=output,
        stderr=console + stderr_path.read_text(errors="replace"),
    )


def _start(
    argv: list[str],
    outdir: Path,
    tmpdir: Path,
    stderr_fh: IO[bytes],
    *,
    piped: bool,
    pass_fds: tuple[int, ...],
) -> subprocess.Popen[bytes]:
    """fio started in `outdir` with the clean environment, in a session of its own (our
    Ctrl-C must not reach it twice), dying with this thread; stdout piped when `piped`
    (the ETA lines). FioError naming the install hint when it cannot start."""
    env = clean_env(tmpdir)
    try:
        return subprocess.Popen(
            _dying_with_parent(argv, env["PATH"]),
            cwd=outdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if piped else subprocess.DEVNULL,
            stderr=stderr_fh,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except OSError as exc:
        raise FioError(f"cannot start {argv[0]}: {exc.strerror} — {FIO_INSTALL_HINT}") from None


def _supervise(
    proc: subprocess.Popen[bytes],
    deadline_s: float,
    grace_s: float,
    should_stop: Callable[[], bool | str | None] | None,
    tick_s: float,
) -> str | None:
    start = time.monotonic()
    fired: str | None = None
    interrupted_at: float | None = None
    try:
        while True:
            try:
                proc.wait(timeout=tick_s)
                return fired
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            elapsed = now - start
            if interrupted_at is None:
                if elapsed >= deadline_s:
                    fired = "sigint"
                elif should_stop is not None and (why := should_stop()):
                    fired = why if isinstance(why, str) else "lease-lost"
                if fired:
                    proc.send_signal(signal.SIGINT)
                    interrupted_at = now
            elif now - interrupted_at >= grace_s:
                # fio leads its own session; each job process calls setsid(), and
                # run_fio's end_job_processes ends those.
                kill_group(proc)
                return "sigkill" if fired == "sigint" else fired
    except BaseException:
        # KeyboardInterrupt or a crash of ours: never leave fio running unattended. The
        # interrupt may have left Popen's wait lock held: reap without it (children).
        proc.send_signal(signal.SIGINT)  # nothing once it has exited (or been reaped)
        if reap(proc, grace_s) is None:
            kill_group(proc)
        raise


def end_job_processes(outdir: Path, timeout_s: float = 5.0) -> None:
    """SIGKILL the job processes a killed fio left running in `outdir`, and wait until
    none is left.

    fio forks a process per job, and each calls setsid(): a SIGKILL to fio's parent process
    (from outside, the OOM killer, or our own `kill_group`) leaves them running, reparented, until
    their runtime ends, holding the target's files (a `--mkfs` mount then cannot be
    unmounted, nor the device claimed again) and the host lock fio inherited. They are
    found by what they share: the name fio and the run's own working directory."""
    target = os.path.realpath(outdir)
    deadline = time.monotonic() + timeout_s
    while left := _job_processes(target):
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            return
        time.sleep(0.01)  # no event says "exited" for a process that is not our child


def _job_processes(cwd: str) -> list[int]:
    """Live (not zombie) fio processes whose working directory is `cwd`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "comm").read_text().strip() != "fio":
                continue
            fields = stat_fields(proc)
            if fields and fields[0] != "Z" and os.readlink(proc / "cwd") == cwd:
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def deadline_for(expected_s: float) -> float:
    """Watchdog deadline: generous over the expected time, since laying out files takes time."""
    return expected_s * 1.5 + 60.0
