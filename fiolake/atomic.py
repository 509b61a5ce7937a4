"""Writing a user's output file whole or not at all: a temporary file beside it, then a
rename, so a reader (a CI step, a browser) never sees half a report."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from fiolake.errors import FiolakeError


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory and
    `os.replace`; FiolakeError naming the file and the fix when it cannot be written."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes the file private (0600); an output file is as shareable as any
        # file the user creates: 0666 less the umask.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _umask() -> int:
    """The process's umask (reading it means setting it: put it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _cannot_write(path: Path, exc: OSError) -> FiolakeError:
    return FiolakeError(
        f"cannot write {path}: {exc.strerror} — choose a file in an existing directory "
        "you may write to"
    )
