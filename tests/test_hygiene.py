"""The session-end hygiene check (tests/hygiene.py) sees what a session leaves behind.

Real leftovers are planted — a libfaketime segment pair of a finished process, a process
started with the session's temporary directory in its environment, a loop device over a
file in it mounted there — and the check names each; once they are gone it names none.
A pytester session whose test leaves a process running fails with the list, alone and
under pytest-xdist (two workers: the controller's check sees the workers' leftovers).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from fiolake.runner import rundirs
from tests import hygiene
from tests.faults.cluster import LIBFAKETIME
from tests.runner.loopdev import NEEDS, can_loop, loop_device, mounted

pytest_plugins = ["pytester"]


def _mine(found: list[str], tmp: Path, pids: set[int]) -> list[str]:
    """The lines about what this test planted (another session may leave its own)."""
    return [f for f in found if str(tmp) in f or any(str(p) in f for p in pids)]


@pytest.mark.skipif(not can_loop(), reason=NEEDS)
def test_the_check_names_every_kind_of_leftover(tmp_path: Path) -> None:
    session = hygiene.Session((tmp_path,), tmp_path)
    before = hygiene.snapshot()
    gone = subprocess.Popen(["true"])
    gone.wait()
    shm = [hygiene.SHM / f"{prefix}{gone.pid}" for prefix in hygiene.FAKETIME_SEGMENTS]
    for path in shm:
        path.write_bytes(b"")
    sleeper = subprocess.Popen(
        ["sleep", "300"], env={**os.environ, "FIOLAKE_HOST_LOCK": str(tmp_path / "host.lock")}
    )
    try:
        with loop_device(tmp_path / "disk.img") as dev, mounted(dev, tmp_path / "mnt"):
            found = _mine(hygiene.leftovers(session, before), tmp_path, {gone.pid, sleeper.pid})
            assert sorted(found) == sorted(
                [
                    f"libfaketime segment {shm[0]}",
                    f"libfaketime segment {shm[1]}",
                    f"loop device {dev} (backing file {tmp_path / 'disk.img'})",
                    f"mount {tmp_path / 'mnt'} (of {dev})",
                    f"process {sleeper.pid}: sleep 300",
                ]
            )
    finally:
        sleeper.kill()
        sleeper.wait()
        hygiene.remove_faketime_segments(gone.pid)
    assert not any(path.exists() for path in shm)
    assert _mine(hygiene.leftovers(session, before), tmp_path, {gone.pid, sleeper.pid}) == []


def test_a_killed_runs_output_directory_is_named_and_a_live_ones_is_not(tmp_path: Path) -> None:
    session = hygiene.Session((tmp_path,), tmp_path)
    before = hygiene.snapshot()
    data_dir = rundirs.data_dir_for(tmp_path, "r-20261128T000000-0123456789")
    # planted where runs put them (the temporary directory), one per kind
    killed = Path(tempfile.mkdtemp(prefix="fiolake-r-20261128T000000-0123456789-"))
    (killed / rundirs.LOCK_NAME).touch()  # no one holds it: its run was killed
    rundirs.note_data_dir(killed, data_dir)
    try:
        with rundirs.run_output_dir("r-20261128T000001-0123456789", None) as live:
            rundirs.note_data_dir(live.path, rundirs.data_dir_for(tmp_path, "r-x"))
            found = [f for f in hygiene.leftovers(session, before) if "fiolake-r-" in f]
        assert found == [f"output directory {killed} of a killed run (its data in {data_dir})"]
    finally:
        shutil.rmtree(killed)
    assert [f for f in hygiene.leftovers(session, before) if "fiolake-r-" in f] == []


@pytest.mark.skipif(LIBFAKETIME is None, reason="libfaketime is missing — run `make sysdeps`")
def test_faketime_segments_of_another_sessions_process_are_not_blamed(tmp_path: Path) -> None:
    """Two Pythons under libfaketime, killed, leave their segment pairs; the watcher saw
    one run with this session's directory in its environment and one without: only the
    first is named once both are gone."""
    session = hygiene.Session((tmp_path / "session",), tmp_path)
    before, stop = hygiene.snapshot(), threading.Event()
    watcher = threading.Thread(target=hygiene.watch_faketime, args=(session, before, stop))
    watcher.start()
    faked = {**os.environ, "LD_PRELOAD": str(LIBFAKETIME), "FAKETIME": "+0"}
    faked.pop("FAKETIME_SHARED", None)
    wait = "import sys; sys.stdin.read()"  # runs until its stdin closes
    ours = subprocess.Popen([sys.executable, "-c", wait], stdin=subprocess.PIPE,
                            env={**faked, "MARK": str(tmp_path / "session")})  # fmt: skip
    theirs = subprocess.Popen([sys.executable, "-c", wait], stdin=subprocess.PIPE, env=faked)
    try:
        deadline = time.monotonic() + 30
        while not {ours.pid, theirs.pid} <= set(session.seen):  # the watcher's verdicts
            assert time.monotonic() < deadline, session.seen
            stop.wait(0.1)
    finally:
        stop.set()
        watcher.join()
        for proc in (ours, theirs):  # kill -9, as the fault tests do: no exit handlers
            proc.kill()
            proc.wait()
    try:
        assert (session.seen[ours.pid], session.seen[theirs.pid]) == (True, False)
        found = _mine(hygiene.leftovers(session, before), tmp_path, {ours.pid, theirs.pid})
        assert found == [
            f"libfaketime segment {hygiene.SHM}/faketime_shm_{ours.pid}",
            f"libfaketime segment {hygiene.SHM}/sem.faketime_sem_{ours.pid}",
        ]
    finally:
        for proc in (ours, theirs):
            hygiene.remove_faketime_segments(proc.pid)


def _sem_temp_name() -> str:
    alphabet = string.ascii_letters + string.digits
    while (name := "sem." + "".join(secrets.choice(alphabet) for _ in range(6))) and (
        hygiene.SHM / name
    ).exists():
        pass
    return name


def test_an_abandoned_sem_open_temp_file_is_named_and_removed_once_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What glibc's sem_open leaves when its process is killed between writing the temp
    file and linking it (planted: the kill cannot be timed into that window). The check
    names a new one; the clean-up removes one made since it started and older than
    SEM_TEMP_ABANDONED_S, never one still fresh (a sem_open may be running) or older.
    Planted in a directory of the test's own: a fault cluster stopping in another worker
    cleans the real /dev/shm, and would take the planted files from under the test."""
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(hygiene, "SHM", shm)
    before = hygiene.snapshot()
    since = time.time() - 120
    ages = {"abandoned": 60.0, "fresh": 0.0, "before the cluster": 180.0}
    planted = {label: hygiene.SHM / _sem_temp_name() for label in ages}
    try:
        for label, path in planted.items():
            path.write_bytes(bytes(32))
            os.utime(path, (time.time() - ages[label],) * 2)
        session = hygiene.Session((tmp_path,), tmp_path)
        names = {p.name for p in planted.values()}
        found = [f for f in hygiene.leftovers(session, before) if any(n in f for n in names)]
        assert found == sorted(
            f"semaphore temp file {p} (a process killed inside sem_open)" for p in planted.values()
        )
        removed = set(hygiene.remove_abandoned_sem_temps(since)) & names
        assert removed == {planted["abandoned"].name}
        assert planted["fresh"].exists() and planted["before the cluster"].exists()
    finally:
        for path in planted.values():
            path.unlink(missing_ok=True)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["alone", "xdist"])
def test_a_session_that_leaves_a_process_fails(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(
        test_leak="""
        import os, subprocess

        def test_leaves_a_sleeper(tmp_path):
            env = {**os.environ, "LEFT": str(tmp_path)}
            subprocess.Popen(["sleep", "300"], env=env)

        def test_cleans_up(tmp_path):
            subprocess.run(["sleep", "0"], env={**os.environ, "LEFT": str(tmp_path)})
        """
    )
    res = pytester.runpytest("-p", "tests.hygiene", "-p", "no:cacheprovider", *workers)
    pids = [int(p) for p in re.findall(r"process (\d+): sleep 300", res.stdout.str())]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert len(pids) == 1, res.stdout.str()
    assert "test hygiene: this session left behind:" in res.stdout.str()
    res.assert_outcomes(passed=2)
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    clean = pytester.runpytest("-p", "tests.hygiene", "-p", "no:cacheprovider", "-k", "cleans",
                               *workers)  # fmt: skip
    assert clean.ret == pytest.ExitCode.OK
    assert "left behind" not in clean.stdout.str()


def test_only_the_suites_containers_from_this_checkout_or_new_unlabelled_ones_are_ours(
    tmp_path: Path,
) -> None:
    """Containers as `podman ps -a --format json` lists them: a stack someone runs beside
    the tests (a compose project of this checkout, another checkout's test session) is
    never blamed."""
    here, elsewhere = tmp_path / "checkout", tmp_path / "other-checkout"

    def container(name: str, working_dir: Path | None, cid: str = "c1") -> dict[str, object]:
        labels = {} if working_dir is None else {hygiene.WORKING_DIR_LABEL: str(working_dir)}
        return {"Id": cid, "Names": [name], "Labels": labels, "State": "running"}

    def ours(c: dict[str, object], before: frozenset[str] = frozenset()) -> bool:
        return hygiene.container_is_ours(c, here, before)

    assert ours(container("fiolake-ct-1a2b3c_minio_1", here))
    assert not ours(container("fiolake-ct-1a2b3c_minio_1", elsewhere))  # another session's
    assert not ours(container("fiolake_minio_1", here))  # a stack run from this checkout
    played = container("fiolake-app-kube-play-pod-0-app", None)
    assert ours(played)  # unlabelled: new since the start is all that tells
    assert not ours(played, frozenset({"c1"}))
    assert not ours(container("someone-elses-db", None))
