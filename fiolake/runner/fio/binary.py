"""The one place that finds fio: every run, `--parse-only` check and version record uses
the binary this module resolved, so the version recorded is that of the fio that ran."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from fiolake.children import kill_group
from fiolake.errors import FioError

VERSION_TIMEOUT_S = 10.0
FIO_INSTALL_HINT = "install it with `apt-get install fio` (or `make setup`)"


@dataclass(frozen=True)
class FioBinary:
    """An absolute path to fio and the version that binary reports (e.g. 'fio-3.33')."""

    path: str
    version: str


def find_fio(name: str = "fio") -> FioBinary:
    """Resolve `name` (a command on PATH or a path) to an absolute fio and its version.

    FioError with an install hint when it is missing or `--version` fails. The version is
    cached per binary and keyed by its mtime, so an upgrade in place is noticed.
    """
    path = locate(name)
    if path is None:
        raise FioError(f"fio not found ({name!r} is not on PATH) — {FIO_INSTALL_HINT}")
    return FioBinary(path, _version(path, os.stat(path).st_mtime_ns))


def locate(name: str, search: str | None = None) -> str | None:
    """The absolute, symlink-free path of `name` (a command on `search`, default PATH, or
    a path), or None when it is missing or not executable."""
    found = shutil.which(name, path=search)
    return None if found is None else os.path.realpath(found)


@functools.lru_cache(maxsize=8)
def _version(path: str, _mtime_ns: int) -> str:
    out = ask(path, "--version", VERSION_TIMEOUT_S)
    version = out.stdout.strip()
    if out.returncode != 0 or not version.startswith("fio-"):
        detail = out.stderr.strip() or version or f"exit code {out.returncode}"
        raise FioError(f"`{path} --version` failed ({detail}) — {FIO_INSTALL_HINT}")
    return version


def ask(
    path: str, flag: str, timeout_s: float, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`path flag` run to its end (stdout, stderr, exit code); FioError when fio cannot
    start or does not answer within `timeout_s`. It runs in a session of its own, and on
    a timeout the whole group is killed: a fio that is a wrapper script (a container's,
    a test's stub) leaves no child behind."""
    try:
        proc = subprocess.Popen(
            [path, flag],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=None if env is None else dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        raise FioError(f"cannot start {path}: {exc.strerror} — {FIO_INSTALL_HINT}") from None
    with proc:  # its pipes closed, whatever happens
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            # A machine so loaded (or a process stopped so long) that fio did not answer:
            # a failure worth retrying (not cached: lru_cache keeps only returned values).
            raise FioError(
                f"`{path} {flag}` did not answer within {timeout_s:g} s — the machine "
                "is overloaded or fio hangs; try again"
            ) from None
        except BaseException:  # an interrupt: no fio left behind either
            kill_group(proc)
            raise
    return subprocess.CompletedProcess([path, flag], proc.returncode, out, err)
