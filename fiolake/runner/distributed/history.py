"""A runner's client operations as a JSON-lines history, for the fault-injection checker.

Off unless `FIOLAKE_HISTORY` names a file. Then `recorded(store, ...)` wraps the runner's
store: every write is logged when invoked and when it completes (ok or fail, with the
error's class), every read when it completes, so an operation cut short by kill -9 shows
as an invocation without an outcome, as in a Jepsen history. Lease and commit bodies are
logged with their writes and reads (epoch, nonce, run id), which is what the checker
needs to tell a zombie attempt from a live one.

Lines are written with one `write(2)` on an O_APPEND descriptor, so a killed runner
leaves at most one partial last line. Events are ordered across processes by the host's
CLOCK_MONOTONIC read with a raw system call: libfaketime (a runner with a skewed clock)
rewrites the libc clock functions, not the system call, so every runner's history uses
the same clock. `wall` is the process's own, possibly skewed, wall clock.

`FIOLAKE_PAUSE_FILE` is for fault tests only: when the file names a protocol step
(`PAUSE_STEPS`), the runner deletes the file on reaching that step, records a `pause`
event and stops itself with SIGSTOP, so a test can kill -9 it at exactly that step.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import signal
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from fiolake import layout
from fiolake.store import ObjectInfo, ObjectStore

# Where a test may ask a runner to stop itself (see the module docstring).
PAUSE_STEPS = ("after-claim", "during-upload", "before-commit", "after-commit")


# SYS_clock_gettime per architecture; elsewhere the libc clock (not skew-proof).
_SYS_CLOCK_GETTIME = {"x86_64": 228, "aarch64": 113}.get(platform.machine())
_CLOCK_MONOTONIC = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


_libc = ctypes.CDLL(None, use_errno=True)


def host_clock_ns() -> int:
    """CLOCK_MONOTONIC of the host in ns, past any LD_PRELOAD clock faking."""
    if _SYS_CLOCK_GETTIME is None:
        return time.monotonic_ns()
    ts = _Timespec()
    if _libc.syscall(_SYS_CLOCK_GETTIME, _CLOCK_MONOTONIC, ctypes.byref(ts)) != 0:
        return time.monotonic_ns()
    return ts.sec * 1_000_000_000 + ts.nsec


class History:
    """Append-only JSON-lines history of one runner process."""

    def __init__(self, path: Path, process: str):
        self.process = process
        self.pid = os.getpid()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def record(self, kind: str, f: str, **fields: Any) -> None:
        """Append one event: `kind` is invoke | ok | fail | pause | start."""
        event = {
            "t": host_clock_ns(),
            "wall": time.time(),
            "process": self.process,
            "pid": self.pid,
            "type": kind,
            "f": f,
            **fields,
        }
        os.write(self._fd, (json.dumps(event, separators=(",", ":")) + "\n").encode())


def _body_fields(key: str, data: bytes) -> dict[str, Any]:
    """What the checker needs from a lease or commit body (nothing for other keys)."""
    if not (key.startswith(layout.CLAIMS_PREFIX) or key.startswith(layout.COMMITS_PREFIX)):
        return {}
    try:
        body = json.loads(data)
    except ValueError:
        return {"body": "unparsable"}
    names = ("runner", "epoch", "seq", "nonce", "state", "run_id", "status", "job_id")
    return {name: body[name] for name in names if name in body}


class HistoryStore:
    """An ObjectStore that records every operation it forwards to `inner`."""

    def __init__(self, inner: ObjectStore, history: History, pause_file: Path | None = None):
        self.inner = inner
        self.history = history
        self.pause_file = pause_file
        self.url = inner.url
        self._uploading: set[str] = set()  # run ids with an object uploaded already

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # bucket, prefix, client: read by callers

    def _pause(self, step: str) -> None:
        if self.pause_file is None:
            return
        try:
            if self.pause_file.read_text().strip() != step:
                return
            self.pause_file.unlink()
        except FileNotFoundError:
            return
        self.history.record("pause", step)
        os.kill(os.getpid(), signal.SIGSTOP)

    def put(
        self, key: str, data: bytes, *, if_none_match: bool = False, if_match: str | None = None
    ) -> str:
        """Forward a write, recorded as invoked and completed."""
        cond = "create" if if_none_match else "cas" if if_match is not None else None
        fields = {"key": key, "cond": cond, **_body_fields(key, data)}
        run_id = layout.run_id_of_attempt_key(key)
        if run_id is not None:
            fields["run_id"] = run_id
        if key.startswith(layout.COMMITS_PREFIX):
            self._pause("before-commit")
        self.history.record("invoke", "put", **fields)
        try:
            etag = self.inner.put(key, data, if_none_match=if_none_match, if_match=if_match)
        except Exception as exc:
            self.history.record("fail", "put", error=type(exc).__name__, **fields)
            raise
        self.history.record("ok", "put", etag=etag, **fields)
        if key.startswith(layout.CLAIMS_PREFIX) and fields.get("seq") == 0:
            self._pause("after-claim")
        elif run_id is not None and run_id not in self._uploading:
            self._uploading.add(run_id)
            self._pause("during-upload")
        elif key.startswith(layout.COMMITS_PREFIX):
            self._pause("after-commit")
        return etag

    def get(self, key: str) -> tuple[bytes, ObjectInfo]:
        """Forward a read, recorded when it completes."""
        try:
            data, info = self.inner.get(key)
        except Exception as exc:
            self.history.record("fail", "get", key=key, error=type(exc).__name__)
            raise
        fields = _body_fields(key, data)
        self.history.record("ok", "get", key=key, etag=info.etag, **fields)
        return data, info

    def head(self, key: str) -> ObjectInfo | None:
        """Forward a HEAD, recorded with whether the object exists."""
        try:
            info = self.inner.head(key)
        except Exception as exc:
            self.history.record("fail", "head", key=key, error=type(exc).__name__)
            raise
        self.history.record("ok", "head", key=key, found=info is not None)
        return info

    def _listed(self, f: str, prefix: str, keys: Iterator[str]) -> Iterator[str]:
        count = 0
        try:
            for key in keys:
                count += 1
                yield key
        except Exception as exc:
            self.history.record("fail", f, key=prefix, error=type(exc).__name__)
            raise
        self.history.record("ok", f, key=prefix, count=count)

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[str]:
        """Forward a LIST, recorded with the number of keys once read to the end."""
        return self._listed("list", prefix, self.inner.list(prefix, start_after=start_after))

    def list_children(self, prefix: str) -> Iterator[str]:
        """Forward a delimited LIST, recorded like `list`."""
        return self._listed("list_children", prefix, self.inner.list_children(prefix))

    def server_time(self) -> datetime:
        """The store's clock (not recorded: it changes nothing)."""
        return self.inner.server_time()


def recorded(
    store: ObjectStore, history_path: Path | None, process: str, pause_file: Path | None = None
) -> ObjectStore:
    """`store` itself when no history is asked for, else a recording wrapper of it."""
    if history_path is None:
        return store
    history = History(history_path, process)
    history.record("start", "process")
    return HistoryStore(store, history, pause_file)
