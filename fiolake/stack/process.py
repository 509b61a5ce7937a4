"""Background server processes: pid files, port checks, start, stop, log tails."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from fiolake.errors import FiolakeError


def write_private(path: Path, text: str) -> None:
    """Write `text` atomically to a file only the owner can read (mode 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def write_private_json(path: Path, data: Mapping[str, object]) -> None:
    """`write_private` for a JSON document."""
    write_private(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: Path) -> dict | None:
    """A JSON document, or None when the file does not exist."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def _reap(pid: int) -> None:
    # A child of this process (tests) stays a zombie until waited for.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def pid_alive(pid: int) -> bool:
    """True if `pid` is a live (non-zombie) process."""
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False  # exited and reaped since the signal check
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def running_pid(pid_path: Path, program: str) -> int | None:
    """The pid recorded in `pid_path` if that process is alive and is `program`."""
    try:
        pid = int(pid_path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    if not pid_alive(pid):
        return None
    argv = _cmdline(pid)
    if argv and not any(Path(arg).name == program for arg in argv[:1]):
        return None  # the pid was recycled by an unrelated process
    return pid


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if nothing listens on host:port (a bind succeeds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def free_ports(count: int) -> list[int]:
    """`count` distinct ports on 127.0.0.1 that nothing listens on right now."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def require_free_port(port: int, what: str, option: str) -> None:
    """Raise a FiolakeError naming the fix when `port` is taken."""
    if not port_free(port):
        raise FiolakeError(
            f"port {port} for {what} is already in use by another process: "
            f"stop it or choose another port with {option}"
        )


def log_tail(path: Path, lines: int = 15) -> str:
    """The last `lines` lines of a log file, indented, for error messages."""
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except FileNotFoundError:
        return f"  (no log at {path})"
    return "\n".join(f"  | {line}" for line in text) or f"  (log {path} is empty)"


def start_process(
    argv: Sequence[str], *, env: Mapping[str, str], log_path: Path, pid_path: Path
) -> int:
    """Start `argv` detached (own session), logging to `log_path`; record its pid."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(  # noqa: S603 - argv is built by us
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
        )
    pid_path.write_text(f"{proc.pid}\n")
    return proc.pid


def stop_process(
    pid_path: Path, program: str, *, grace_s: float = 10.0, ports: Sequence[int] = ()
) -> bool:
    """SIGTERM the recorded process, SIGKILL after `grace_s`; True if one was running.

    Returns once its `ports` are free: the kernel releases listeners a moment after exit.
    """
    pid = running_pid(pid_path, program)
    pid_path.unlink(missing_ok=True)
    if pid is None:
        return False
    kill_pid(pid, grace_s=grace_s)
    deadline = time.monotonic() + 5
    while not all(port_free(port) for port in ports) and time.monotonic() < deadline:
        time.sleep(0.02)
    return True


def kill_pid(pid: int, *, grace_s: float) -> None:
    """Terminate `pid` (SIGTERM, then SIGKILL) and wait until it is gone."""
    sig = signal.SIGTERM if grace_s > 0 else signal.SIGKILL
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    deadline = time.monotonic() + grace_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)


def _quoted(log_path: Path | None) -> str:
    return f"; last log lines:\n{log_tail(log_path)}" if log_path is not None else ""


def wait_for(
    check: Callable[[], bool],
    *,
    timeout_s: float,
    what: str,
    log_path: Path | None = None,
    pid: int | None = None,
) -> None:
    """Poll `check` until it is true (backing off to 0.5 s); on timeout, or when process
    `pid` dies, raise a FiolakeError that quotes the last lines of `log_path` if given."""
    deadline = time.monotonic() + timeout_s
    delay = 0.05
    while True:
        if check():
            return
        if pid is not None and not pid_alive(pid):
            raise FiolakeError(f"{what} exited during start-up{_quoted(log_path)}")
        if time.monotonic() > deadline:
            raise FiolakeError(f"{what} not ready after {timeout_s:.0f} s{_quoted(log_path)}")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)
