"""A run's private output directory, and what a killed run left behind.

Each attempt writes fio's job file, JSON and logs in a private directory
(`<tmp>/fiolake-<run_id>-XXXXXXXX`) and fio's data files in `<target>/.fiolake-<run_id>`;
both are removed when the attempt ends. A runner killed with SIGKILL (an OOM kill, a
node drain, the fault tests' nemesis) never reaches that clean-up: the output directory
stays in /tmp and, worse, the data files — as large as the job's `size` — stay on the
storage being measured.

So the output directory carries a lock file that the attempt holds (`flock`) for as long
as it runs, and a note naming its data directory. The kernel drops the lock when the
process dies, however it dies and in whichever PID namespace it ran; fio inherits the
lock (as it does the host lock), so it is held until fio and its job processes are gone
too. A directory whose lock can be taken is abandoned, never another live run's: `remove_abandoned`
deletes it with its data directory. Each attempt calls it before it starts (under the
host lock), so the next run on the host cleans up after a killed one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PREFIX = "fiolake-r-"  # + the run id (ids.new_run_id: "r-…") after "fiolake-"
LOCK_NAME = ".in-use"
DATA_DIR_NOTE = ".data-dir"
DATA_DIR_PREFIX = ".fiolake-r-"  # `<target>/.fiolake-<run_id>`: only such a path is removed
# A directory without a lock file was made by a fiolake from before the lock (or its
# attempt was killed within microseconds of making it): removed once surely stale.
UNLOCKED_STALE_S = 24 * 3600.0
# An attempt makes its directory and then takes the lock: one changed within the last
# minute may be a live attempt between the two, so it is left for a later sweep.
YOUNG_S = 60.0


def data_dir_for(target_dir: Path, run_id: str) -> Path:
    """Where a run's fio data files go in its target directory."""
    return Path(target_dir) / f".fiolake-{run_id}"


@dataclass(frozen=True)
class RunDir:
    """A run's output directory and the descriptor of its lock (pass it to fio)."""

    path: Path
    lock_fd: int


@contextlib.contextmanager
def run_output_dir(run_id: str, workdir: Path | None) -> Iterator[RunDir]:
    """A fresh output directory for `run_id`, locked while the block runs and removed
    when it ends (the data directory noted in it is the caller's to remove)."""
    outdir = Path(tempfile.mkdtemp(prefix=f"fiolake-{run_id}-", dir=workdir))
    fd = os.open(outdir / LOCK_NAME, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield RunDir(outdir, fd)
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
        os.close(fd)


def note_data_dir(outdir: Path, data_dir: Path) -> None:
    """Record the data directory a run is about to create, for `remove_abandoned`."""
    (outdir / DATA_DIR_NOTE).write_text(str(data_dir), encoding="utf-8")


def _abandoned(outdir: Path, now: float, min_age_s: float) -> bool:
    try:
        if now - outdir.stat().st_mtime < min_age_s:
            return False
        fd = os.open(outdir / LOCK_NAME, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return now - outdir.stat().st_mtime > UNLOCKED_STALE_S if outdir.exists() else False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: a live run's
    finally:
        os.close(fd)  # our lock, if we got it, goes with the descriptor
    return True


def _noted_data_dir(outdir: Path) -> Path | None:
    try:
        data_dir = Path((outdir / DATA_DIR_NOTE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return data_dir if data_dir.name.startswith(DATA_DIR_PREFIX) else None


def abandoned(
    workdir: Path | None = None, *, min_age_s: float = YOUNG_S
) -> list[tuple[Path, Path | None]]:
    """The output directories of killed runs in `workdir` (default: the system's
    temporary directory), each with the data directory it notes (None: none noted, or
    not a run's), unchanged for at least `min_age_s`."""
    base = Path(workdir or tempfile.gettempdir())
    now = time.time()
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(PREFIX) and e.is_dir()]
    except OSError:
        return []
    found = [Path(e.path) for e in entries if _abandoned(Path(e.path), now, min_age_s)]
    return [(outdir, _noted_data_dir(outdir)) for outdir in found]


def remove_abandoned(workdir: Path | None = None, *, min_age_s: float = YOUNG_S) -> list[Path]:
    """Delete the `abandoned` output directories and the data directories they note;
    the paths removed."""
    removed: list[Path] = []
    for outdir, data_dir in abandoned(workdir, min_age_s=min_age_s):
        if data_dir is not None and data_dir.is_dir():
            shutil.rmtree(data_dir, ignore_errors=True)
            removed.append(data_dir)
        shutil.rmtree(outdir, ignore_errors=True)
        removed.append(outdir)
    return removed
