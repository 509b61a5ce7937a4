"""Session-end hygiene (issue 40): a test run leaves nothing behind on the machine.

A pytest plugin (registered by tests/conftest.py through `pytest_plugins`). At session
start it snapshots what the machine holds; at session end it lists what this session
left behind and fails the run (exit status 1, the list on the terminal) if anything is:

- libfaketime segments (`/dev/shm/faketime_shm_<pid>`, `/dev/shm/sem.faketime_sem_<pid>`)
  made since the start by a process of ours: a watcher thread looks at each new segment's
  process twice a second while the session runs (by the time the check runs, a leaked
  segment's process is usually gone); one whose process was never seen counts as ours;
- semaphore temp files (`/dev/shm/sem.XXXXXX`) made since the start: glibc's sem_open
  writes one and links it to the semaphore's name, so a process killed in between (a
  libfaketime runner under kill -9 while it opens its semaphore) abandons it. It carries no
  owner, so what is new since the start counts;
- output directories of killed runs (`<tmp>/fiolake-r-…`, runner.rundirs: lock free)
  whose noted data directory is under the session's base temporary directory: the next
  run removes them, but a test that kills a run must not leave it to the next session;
- loop devices whose backing file is under the session's base temporary directory;
- mounts whose target is under it, or whose source is one of those loop devices;
- podman containers named like the suite's (`fiolake-ct-…`, `…-kube-play-…`): those
  whose compose label (`com.docker.compose.project.working_dir`) names this checkout, or,
  unlabelled, made since the start; never a stack someone runs beside the tests;
- processes (MinIO, OpenBao, runners, …) whose command line or environment names the
  session's base temporary directory — every test process inherits FIOLAKE_HOST_LOCK
  under it (tests/conftest.py), every `stack` fixture's state directory is in it.

Ownership is judged by path or name where one exists, so another session running on the
machine at the same time is not blamed; kube-played containers carry no owner, for them
only what is new since the start counts. Under pytest-xdist
the check runs on the controller only (its base temporary directory holds the workers').
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fiolake.runner import rundirs

SHM = Path("/dev/shm")
FAKETIME_SEGMENTS = ("faketime_shm_", "sem.faketime_sem_")  # + the pid that made them
# glibc's sem_open temp name: "sem." + 6 of [A-Za-z0-9] (__gen_tempname).
SEM_TEMP = re.compile(r"sem\.[A-Za-z0-9]{6}")
# A temp file lives microseconds while sem_open runs; one older than this was abandoned.
SEM_TEMP_ABANDONED_S = 10.0
CONTAINER_PREFIXES = ("fiolake-ct-",)  # tests/container/conftest.compose_project
CONTAINER_MARKS = ("kube-play",)  # the kube-played pods of tests/container
WORKING_DIR_LABEL = "com.docker.compose.project.working_dir"
SNAPSHOT = pytest.StashKey["Snapshot"]()
SESSION = pytest.StashKey["Session"]()
WATCH = pytest.StashKey[threading.Event]()


@dataclass(frozen=True)
class Snapshot:
    """What the machine held at session start that carries no owner."""

    faketime: frozenset[str] = frozenset()  # segment file names in /dev/shm
    containers: frozenset[str] = frozenset()  # podman container ids
    sem_temps: frozenset[str] = frozenset()  # glibc sem_open temp file names in /dev/shm


@dataclass
class Session:
    """Whose things are ours: paths under `roots`, containers from `checkout`."""

    roots: tuple[Path, ...]
    checkout: Path
    me: frozenset[int] = field(default_factory=lambda: frozenset(_ancestors(os.getpid())))
    seen: dict[int, bool] = field(default_factory=dict)  # faketime pid -> ours (watch)

    def owns_path(self, path: str) -> bool:
        """Whether `path` (maybe `… (deleted)`) is under one of the session's roots."""
        path = path.removesuffix(" (deleted)")
        return any(path == str(r) or path.startswith(f"{r}/") for r in self.roots)

    def owns_process(self, pid: int) -> bool:
        """Whether process `pid` is one this session started (and not pytest itself)."""
        if pid in self.me:
            return False
        text = ""
        for name in ("cmdline", "environ"):
            try:
                text += Path(f"/proc/{pid}/{name}").read_bytes().decode(errors="replace") + "\0"
            except OSError:
                return False  # gone, or not ours to read
        # xdist's workers never match: spawned before the base temporary directory was
        # made, neither their command line nor their environment names it
        return any(str(r) in text for r in self.roots)


def _ancestors(pid: int) -> list[int]:
    out = []
    while pid > 0:
        out.append(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def faketime_segments() -> set[str]:
    """The libfaketime segment files in /dev/shm now."""
    try:
        return {p.name for p in SHM.iterdir() if p.name.startswith(FAKETIME_SEGMENTS)}
    except OSError:
        return set()


def sem_temps() -> set[str]:
    """glibc's sem_open temp files in /dev/shm now (`sem.XXXXXX`)."""
    try:
        return {p.name for p in SHM.iterdir() if SEM_TEMP.fullmatch(p.name)}
    except OSError:
        return set()


def remove_abandoned_sem_temps(since: float) -> list[str]:
    """Unlink the sem_open temp files made at or after `since` (a time.time()) and older
    than SEM_TEMP_ABANDONED_S: a libfaketime runner killed inside sem_open left them, and
    no process can still be using one. Their names."""
    removed = []
    now = time.time()
    for name in sem_temps():
        try:
            made = (SHM / name).stat().st_mtime
        except FileNotFoundError:
            continue  # linked and unlinked by a sem_open that finished
        if since <= made <= now - SEM_TEMP_ABANDONED_S:
            (SHM / name).unlink(missing_ok=True)
            removed.append(name)
    return removed


def _segment_pid(name: str) -> int:
    return int(name.rsplit("_", 1)[1]) if name.rsplit("_", 1)[1].isdigit() else 0


def remove_faketime_segments(pid: int) -> None:
    """Unlink the libfaketime segments process `pid` made: libfaketime 0.9.10 preloaded
    into Python makes a pair per process and never unlinks them, and the `faketime`
    wrapper unlinks its pair only when it exits on its own (not when killed)."""
    for prefix in FAKETIME_SEGMENTS:
        (SHM / f"{prefix}{pid}").unlink(missing_ok=True)


def _json(argv: list[str]) -> object:
    if shutil.which(argv[0]) is None:
        return None
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return json.loads(done.stdout)


def container_is_ours(c: dict[str, object], checkout: Path, before: frozenset[str]) -> bool:
    """Whether podman container `c` (`podman ps --format json`) is this session's: named
    like the suite's, and either labelled with this checkout or, unlabelled (kube-played),
    made since the start. A stack someone runs beside the tests (`make demo`, a compose
    project of this checkout or another's, another checkout's test session) is not."""
    names = [str(n) for n in c.get("Names") or []]  # type: ignore[attr-defined]
    suite_made = any(n.startswith(CONTAINER_PREFIXES) for n in names) or any(
        mark in n for n in names for mark in CONTAINER_MARKS
    )
    if not suite_made:
        return False
    working_dir = (c.get("Labels") or {}).get(WORKING_DIR_LABEL)  # type: ignore[attr-defined]
    if working_dir is not None:
        return working_dir == str(checkout)
    return str(c.get("Id", "")) not in before


def _containers() -> list[dict[str, object]]:
    found = _json(["podman", "ps", "-a", "--format", "json"])
    return found if isinstance(found, list) else []


def snapshot() -> Snapshot:
    """What is there before the session: faketime segments and podman containers."""
    ids = frozenset(str(c.get("Id", "")) for c in _containers())
    return Snapshot(frozenset(faketime_segments()), ids, frozenset(sem_temps()))


def leftovers(session: Session, before: Snapshot) -> list[str]:
    """Everything the session left behind, one line each (empty when clean)."""
    out = []
    for name in sorted(faketime_segments() - before.faketime):
        pid = _segment_pid(name)
        alive = Path(f"/proc/{pid}").exists()
        if session.owns_process(pid) if alive else session.seen.get(pid, True):
            out.append(f"libfaketime segment {SHM / name}")
    for name in sorted(sem_temps() - before.sem_temps):
        out.append(f"semaphore temp file {SHM / name} (a process killed inside sem_open)")
    for outdir, data_dir in rundirs.abandoned(min_age_s=0):
        if data_dir is not None and session.owns_path(str(data_dir)):
            out.append(f"output directory {outdir} of a killed run (its data in {data_dir})")
    loops = _json(["losetup", "--json", "--list"])
    ours = set()
    for dev in loops.get("loopdevices", []) if isinstance(loops, dict) else []:
        if session.owns_path(str(dev.get("back-file") or "")):
            ours.add(dev["name"])
            out.append(f"loop device {dev['name']} (backing file {dev['back-file']})")
    mounts = _json(["findmnt", "--json", "--list", "--output", "TARGET,SOURCE"])
    for m in mounts.get("filesystems", []) if isinstance(mounts, dict) else []:
        if session.owns_path(str(m.get("target") or "")) or m.get("source") in ours:
            out.append(f"mount {m['target']} (of {m['source']})")
    for c in _containers():
        if container_is_ours(c, session.checkout, before.containers):
            names = ", ".join(str(n) for n in c.get("Names") or [])  # type: ignore[union-attr]
            out.append(f"podman container {names} ({c.get('State', '?')})")
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and session.owns_process(int(proc.name)):
            try:
                argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            except OSError:
                continue
            out.append(f"process {proc.name}: {argv[:200]}")
    return out


def watch_faketime(session: Session, before: Snapshot, stop: threading.Event) -> None:
    """Until `stop`, note twice a second whether each new libfaketime segment's process
    is ours (`Session.seen`), while it still runs."""
    while not stop.wait(0.5):
        for name in faketime_segments() - before.faketime:
            pid = _segment_pid(name)
            if pid not in session.seen and Path(f"/proc/{pid}").exists():
                session.seen[pid] = session.owns_process(pid)


def _session(config: pytest.Config) -> Session:
    base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    return Session((base, base.resolve()), config.rootpath)


def _controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")  # an xdist worker has it


def pytest_sessionstart(session: pytest.Session) -> None:
    """Snapshot what carries no owner before the first test runs."""
    config = session.config
    if _controller(config):
        config.stash[SNAPSHOT] = before = snapshot()
        config.stash[SESSION] = mine = _session(config)
        config.stash[WATCH] = stop = threading.Event()
        threading.Thread(
            target=watch_faketime, args=(mine, before, stop), name="hygiene", daemon=True
        ).start()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run (exit 1) when it left anything behind, and say what."""
    config = session.config
    if not _controller(config) or SNAPSHOT not in config.stash:
        return
    config.stash[WATCH].set()
    found = leftovers(config.stash[SESSION], config.stash[SNAPSHOT])
    if not found:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    lines = ["test hygiene: this session left behind:", *(f"  {f}" for f in found)]
    if reporter is not None:
        reporter.write_sep("=", "leftovers", red=True)
        for line in lines:
            reporter.write_line(line)
    else:
        print("\n".join(lines))  # noqa: T201 - no terminal reporter (-p no:terminal)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
