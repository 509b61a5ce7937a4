"""fiolake.children: a child is reaped and its group killed even when an interrupted
`Popen.wait(timeout)` left Popen's wait lock held (then `proc.wait()` never returns)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from fiolake.children import group_members, kill_group, reap, sigint_deferred
from fiolake.stack.process import pid_alive


def _group(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A shell leading its own group, and the pid of the `sleep` it started and waits for."""
    child = tmp_path / "child"
    proc = subprocess.Popen(
        ["sh", "-c", f"sleep 300 & echo $! > {child}; wait"], start_new_session=True
    )
    deadline = time.monotonic() + 30
    while not (child.exists() and child.read_text().strip()):
        assert time.monotonic() < deadline, "the shell never started its child"
        time.sleep(0.01)
    return proc, int(child.read_text())


def test_a_wait_lock_left_held_by_an_interrupt_does_not_hang_the_clean_up(tmp_path: Path) -> None:
    proc, sleeper = _group(tmp_path)
    # What a KeyboardInterrupt between Popen._wait's acquire(False) and its `try` leaves:
    # the lock held by nobody who will release it (2 of 200 interrupted waits, measured).
    assert proc._waitpid_lock.acquire(blocking=False)  # type: ignore[attr-defined]
    try:
        done = threading.Thread(target=kill_group, args=(proc,), daemon=True)
        done.start()
        done.join(10)
        assert not done.is_alive(), "kill_group blocked on Popen's wait lock"
        assert proc.returncode == -9
        assert not pid_alive(sleeper)  # the whole group, not just the leader
    finally:
        proc._waitpid_lock.release()  # type: ignore[attr-defined]


def test_the_fault_is_real_popen_wait_blocks_on_that_lock(tmp_path: Path) -> None:
    proc = subprocess.Popen(["true"])
    assert proc._waitpid_lock.acquire(blocking=False)  # type: ignore[attr-defined]
    try:
        time.sleep(0.2)  # `true` has exited: only the lock stands in the way
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5)
    finally:
        proc._waitpid_lock.release()  # type: ignore[attr-defined]
    assert proc.wait(timeout=5) == 0


def test_reap_gives_up_after_its_timeout_and_reaps_once_the_child_exits(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "0.5"])
    started = time.monotonic()
    assert reap(proc, 0.1) is None and proc.returncode is None
    assert 0.1 <= time.monotonic() - started < 0.4
    assert reap(proc, 10) == 0 and proc.returncode == 0


def test_a_child_reaped_elsewhere_is_gone_and_never_signalled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = subprocess.Popen(["true"])
    os.waitpid(proc.pid, 0)  # reaped behind Popen's back: the pid may be reused now
    assert reap(proc) == 0
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: sent.append((pid, sig)))
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append((pid, sig)))
    kill_group(proc)
    assert sent == [] and proc.returncode == 0  # known gone: nothing is signalled


def test_kill_group_returns_once_no_member_is_left_and_names_one_that_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc, sleeper = _group(tmp_path)
    assert sorted(group_members(proc.pid)) == sorted([proc.pid, sleeper])
    # A member the SIGKILL has not reached yet (on a busy host it dies only once the
    # kernel schedules it): here the group signal is withheld, so only the leader dies.
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: None)
    started = time.monotonic()
    try:
        assert kill_group(proc, timeout_s=0.3) == [sleeper]
        assert 0.3 <= time.monotonic() - started < 5  # it waited for the member
    finally:
        os.kill(sleeper, 9)
    monkeypatch.undo()
    (tmp_path / "again").mkdir()
    proc, sleeper = _group(tmp_path / "again")
    assert kill_group(proc) == [] and group_members(proc.pid) == []
    assert not pid_alive(sleeper)


def test_a_ctrl_c_inside_sigint_deferred_is_raised_once_the_block_has_ended() -> None:
    """What `ensure_minio` relies on: the child's Popen object is assigned before the
    KeyboardInterrupt, so the clean-up can kill its group.

    Python's own Ctrl-C handler is installed first: a suite started as a background job
    (`make test &`) inherits SIGINT ignored, and Python then installs none, so no Ctrl-C
    could land (seen in a fresh clone's suite run that way)."""
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        handler = signal.getsignal(signal.SIGINT)
        assigned = []
        with pytest.raises(KeyboardInterrupt):
            with sigint_deferred():
                signal.raise_signal(signal.SIGINT)  # Python runs handlers right after this
                assigned.append("proc")
        assert assigned == ["proc"]
        assert signal.getsignal(signal.SIGINT) is handler
        with sigint_deferred():  # no Ctrl-C: nothing raised, the handler back as it was
            assigned.append("again")
        assert assigned == ["proc", "again"] and signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_an_ignored_ctrl_c_stays_ignored() -> None:
    """A SIGINT the process ignores (a background job) is left as it is: nothing held,
    nothing raised after the block."""
    inherited = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with sigint_deferred():
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_sigint_deferred_outside_the_main_thread_changes_nothing() -> None:
    # signal.signal raises ValueError outside the main thread; no KeyboardInterrupt lands there
    errors: list[BaseException] = []

    def body() -> None:
        try:
            with sigint_deferred():
                pass
        except BaseException as exc:  # noqa: BLE001 - the assertion below names it
            errors.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(10)
    assert errors == []
