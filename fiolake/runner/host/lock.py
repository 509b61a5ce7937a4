"""One fio per host: the host-wide lock every fio that fiolake starts takes first.

Runners on one host (one per backend) would otherwise run fio at the same time and
measure each other. The lock is an flock(2) on a well-known file, `DEFAULT_PATH` (the
directory the container and Kubernetes files mount from the host, so runners in
containers and on the host share it), or `FIOLAKE_HOST_LOCK` / `--host-lock`.

- Solo runs take it exclusive. Members of a gang job take it shared: they are meant to
  run together, so they do not exclude each other, but a solo run still waits for every
  gang member on the host to finish and they wait for it.
- The kernel drops an flock when the last descriptor of its open file description
  closes, i.e. when the holder exits however it dies (kill -9 too): no stale lock, no
  lease to expire. fio inherits the descriptor, so a killed runner's fio, which its
  parent-death signal stops, keeps the lock until it has exited too.
- A waiter blocks in the kernel in a helper thread (no polling while the other fio
  measures; the kernel wakes it the moment the holder lets go) and the caller checks
  `should_stop` every `check_s`, so a lost lease or a signal ends the wait.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from fiolake.errors import UsageProblem

DEFAULT_PATH = Path("/run/lock/fiolake/host.lock")
ENV_VAR = "FIOLAKE_HOST_LOCK"
# Flag recorded on every run made without the lock (`--share-host`).
SHARED_FLAG = "shared-host"


class HostLock:
    """The host lock at `path`; exclusive, or shared (gang members) when `shared`."""

    def __init__(self, path: Path, *, shared: bool = False, holder: str = "") -> None:
        self.path = Path(path)
        self.shared = shared
        self.holder = holder  # written into the file while held: who a waiter waits for
        self._fd: int | None = None
        self._depth = 0  # acquire() while held nests (a precondition run, then the measured)
        self._pinned = False  # pin(): keep the lock past the last release() until unpin()
        self._guard = threading.Lock()  # pin's timer unpins from another thread
        self._pin_s: float | None = None  # pin(at_most_s): counted from the last release()

    def check(self) -> None:
        """Create the lock's directory and file if missing; UsageProblem if impossible."""
        os.close(self._open())

    def _open(self) -> int:
        try:
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # Sticky and world-writable like /run/lock: runners of any user share it.
                self.path.parent.chmod(0o1777)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            if os.fstat(fd).st_uid == os.geteuid():
                # The umask took write from group and others: runners of other users (uid
                # 10001 in the containers) must open the same file read-write.
                os.fchmod(fd, 0o666)
        except OSError as exc:
            raise UsageProblem(
                f"cannot use the host lock {self.path}: {exc.strerror} — give --host-lock "
                f"PATH (or {ENV_VAR}) in a directory you may write to, or --share-host to "
                "run without it (runs are then flagged shared-host)"
            ) from None
        return fd

    def held_by(self) -> str:
        """What the current holder wrote into the lock file ('' if nothing)."""
        try:
            return self.path.read_text(errors="replace").strip()[:200]
        except OSError:
            return ""

    def acquire(
        self,
        should_stop: Callable[[], object] | None = None,
        *,
        on_wait: Callable[[str], None] | None = None,
        check_s: float = 0.2,
    ) -> float | None:
        """Take the lock; the milliseconds waited, or None when `should_stop` returned a
        true value first (the lock is then not held). Taking it again while held nests:
        0 ms, and only the outermost `release()` lets go."""
        if self._fd is not None:
            self._depth += 1
            return 0.0
        fd = self._open()
        op = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
        t0 = time.monotonic()
        try:
            fcntl.flock(fd, op | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait(self.held_by())
            if not self._wait(fd, op, should_stop, check_s):
                return None
        self._fd, self._depth = fd, 1
        if not self.shared and self.holder:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{self.holder}\n".encode(), 0)
        return (time.monotonic() - t0) * 1e3

    @staticmethod
    def _wait(fd: int, op: int, should_stop: Callable[[], object] | None, check_s: float) -> bool:
        got = threading.Event()
        guard = threading.Lock()
        abandoned = False

        def block() -> None:
            fcntl.flock(fd, op)  # sleeps in the kernel until the holder lets go
            with guard:
                if abandoned:  # nobody wants it any more: let the next waiter have it
                    os.close(fd)
                    return
                got.set()

        threading.Thread(target=block, daemon=True, name="host-lock").start()
        while not got.wait(check_s):
            if should_stop is not None and should_stop():
                with guard:
                    if got.is_set():
                        return True
                    abandoned = True
                return False
        return True

    def fds(self) -> tuple[int, ...]:
        """The held lock's descriptor, for fio to inherit: were fiolake killed (-9), the
        lock would still be held until fio, stopped by its parent-death signal, exits."""
        return () if self._fd is None else (self._fd,)

    def release(self) -> None:
        """Let the next fio on this host start (closing the descriptor drops the flock)."""
        with self._guard:
            self._depth -= 1
            if self._fd is None or self._depth > 0:
                return
            if not self._pinned:
                self._drop()
            elif self._pin_s is not None:  # fio is done: the upload's time starts now
                timer = threading.Timer(self._pin_s, self.unpin)
                timer.daemon = True
                timer.start()

    def pin(self, at_most_s: float | None = None) -> None:
        """Keep the lock, once taken, past the release() that would let it go, until
        `unpin()` or `at_most_s` after that release (fio's own time does not count): a
        runner uploads and commits its run before the next fio on the host starts, so
        that work is not measured as another run's busy CPU — but a store outage (uploads
        retried for minutes) must not stop every other runner on the host for as long."""
        with self._guard:
            self._pinned, self._pin_s = True, at_most_s

    def unpin(self) -> None:
        """Undo `pin()`; let the lock go if no acquire() still holds it."""
        with self._guard:
            self._pinned = False
            if self._fd is not None and self._depth <= 0:
                self._drop()

    def _drop(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if not self.shared:
            os.ftruncate(fd, 0)
        os.close(fd)


def wait_while_held(
    path: Path, should_stop: Callable[[], object], *, max_s: float, check_s: float = 0.2
) -> bool:
    """Block (in the kernel, no polling of anything else) while a solo fio holds the host
    lock at `path`, at most `max_s`; True when it was free. Shared holders (gang members)
    do not count: a runner meant to join their gang must not wait for them.

    An idle runner calls this before it asks the store for jobs: while another runner's
    fio measures, it could not run a job anyway, and every poll (TLS, listing, the
    server's work) is CPU that fio's run would count as other work."""
    waiter = HostLock(path, shared=True)
    deadline = time.monotonic() + max_s
    got = waiter.acquire(lambda: should_stop() or time.monotonic() >= deadline, check_s=check_s)
    if got is None:
        return False
    waiter.release()
    return True


@contextlib.contextmanager
def between_solo_runs(path: Path, *, max_s: float) -> Iterator[bool]:
    """Hold the host lock shared for the block, once no solo fio holds it (waiting at
    most `max_s`); yields whether it is held. A host without the lock file (no fiolake fio
    ran here) or one it cannot be opened on yields False at once, and the file is never
    created.

    `publish --wait` polls the store inside this: on a host where a runner measures, the
    poll (TLS, listing, the server's work) waits for the run to end, and a runner that
    wants the lock meanwhile waits for the poll (its host_lock_wait_ms), so the poll's CPU
    is never in a run's outside_cpu_pct."""
    if not path.is_file():
        yield False
        return
    waiter = HostLock(path, shared=True)
    deadline = time.monotonic() + max_s
    try:
        got = waiter.acquire(lambda: time.monotonic() >= deadline)
    except UsageProblem:
        got = None
    try:
        yield got is not None
    finally:
        if got is not None:
            waiter.release()
