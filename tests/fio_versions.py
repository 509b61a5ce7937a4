"""fio releases built from source for the fio-version tier (issue 43 part 3).

The tarballs live in ../shared/fio-src (beside the clone, read in place, never copied into
the repo), each checked against that folder's SHA256SUMS before it is built. A build is
cached like MinIO's: `<cache>/fio/fio-VER/fio` (FIOLAKE_CACHE_DIR, else ~/.cache/fiolake),
one binary per version, so only the first session on a machine compiles.

A plugin (tests/conftest.py lists it): when a selected test carries the `fio_versions`
mark, the builds start in a background thread right after collection, one version after
another (two cores), so the compile overlaps the tests that run before the tier; the
tier's session fixture `fio_builds` waits for them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fiolake.stack.minio import cache_dir

FIO_SRC = Path(__file__).resolve().parents[2] / "shared" / "fio-src"
VERSIONS = ("3.28", "3.36", "3.42")
# Only what the tier runs: no gfio (off by default), no optional engines or libraries that
# happen to be installed; --disable-native so a cached binary runs on any x86-64 CPU.
CONFIGURE = (
    "--disable-native",
    "--disable-numa",
    "--disable-rdma",
    "--disable-rados",
    "--disable-rbd",
    "--disable-http",
    "--disable-gfapi",
    "--disable-pmem",
    "--disable-tcmalloc",
    "--disable-libzbc",
    "--disable-dfs",
)
BUILD_TIMEOUT_S = 900


def fio_binary(version: str) -> Path:
    """Where the build of fio `version` is cached."""
    return cache_dir() / "fio" / f"fio-{version}" / "fio"


def missing_prerequisite() -> str | None:
    """Why the tier cannot build here, or None."""
    if not (FIO_SRC / "SHA256SUMS").is_file():
        return f"no fio sources ({FIO_SRC})"
    if all(fio_binary(v).exists() for v in VERSIONS):
        return None
    for tool in ("cc", "make"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (needed to build fio)"
    if not Path("/usr/include/libaio.h").exists():
        return "libaio-dev is not installed (the shipped profiles use ioengine=libaio)"
    return None


def _expected_sha256(tarball: str) -> str:
    for line in (FIO_SRC / "SHA256SUMS").read_text().splitlines():
        digest, _, name = line.partition("  ")
        if name.strip() == tarball:
            return digest
    raise RuntimeError(f"{tarball} is not listed in {FIO_SRC / 'SHA256SUMS'}")


def build_fio(version: str) -> Path:
    """fio `version`'s binary: the cached one, else built from its verified tarball.

    A lock file per version keeps two sessions (xdist workers) from building it twice.
    """
    binary = fio_binary(version)
    binary.parent.mkdir(parents=True, exist_ok=True)
    with open(binary.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return binary
        tarball = f"fio-{version}.tar.gz"
        data = (FIO_SRC / tarball).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != _expected_sha256(tarball):
            raise RuntimeError(f"{FIO_SRC / tarball}: sha256 {digest} does not match SHA256SUMS")
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"fio-{version}-") as tmp:
            with tarfile.open(FIO_SRC / tarball) as tar:
                tar.extractall(tmp, filter="data")
            src = Path(tmp) / f"fio-{version}"
            for cmd in (["./configure", *CONFIGURE], ["make", "-j2", "fio"]):
                _step(version, cmd, src)
            partial = binary.with_suffix(".part")
            shutil.copy2(src / "fio", partial)
            os.replace(partial, binary)  # never a half-copied binary under the cached name
        seconds = time.monotonic() - started
        (binary.parent / "build-seconds").write_text(f"{seconds:.0f}\n")
        return binary


# The build step running now: stopped with its process group when the session ends first
# (Ctrl-C, a failure elsewhere), so no `make` goes on compiling orphaned (issue 40).
_RUNNING: set[subprocess.Popen] = set()
_STOPPING = threading.Event()
_LOCK = threading.Lock()  # a step starts and registers, or the session stops it: not both


def _step(version: str, cmd: list[str], src: Path) -> None:
    with tempfile.TemporaryFile("w+") as output:
        with _LOCK:
            if _STOPPING.is_set():
                raise RuntimeError(f"fio {version}: the session ended before its build")
            # At the lowest priority: on a fresh machine the builds overlap the serial
            # suite, whose verdict tests time real fio runs; they take only idle CPU.
            proc = subprocess.Popen(
                ["nice", "-n", "19", *cmd], cwd=src, stdout=output, stderr=subprocess.STDOUT,
                text=True, start_new_session=True,
            )  # fmt: skip
            _RUNNING.add(proc)
        try:
            code = proc.wait(timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _stop(proc)
            raise RuntimeError(f"fio {version}: {cmd[0]} took over {BUILD_TIMEOUT_S} s") from None
        finally:
            _RUNNING.discard(proc)
        if code != 0:
            output.seek(0)
            tail = "\n".join(output.read().splitlines()[-15:])
            raise RuntimeError(f"fio {version}: {' '.join(cmd)} failed:\n{tail}")


def _stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


class _Builds:
    """The background build of every version, one after another."""

    def __init__(self) -> None:
        self.results: dict[str, Path | BaseException] = {}
        self.thread = threading.Thread(target=self._run, name="fio-builds", daemon=True)

    def _run(self) -> None:
        for version in VERSIONS:
            try:
                self.results[version] = build_fio(version)
            except Exception as exc:  # reported by the fixture, in the tier's tests
                self.results[version] = exc


_BUILDS: _Builds | None = None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the builds as soon as a selected test needs them."""
    global _BUILDS
    wanted = any(item.get_closest_marker("fio_versions") for item in session.items)
    if wanted and _BUILDS is None and missing_prerequisite() is None:
        _BUILDS = _Builds()
        _BUILDS.thread.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A build still running when the session ends is stopped (the next session redoes it)."""
    with _LOCK:
        _STOPPING.set()
        running = list(_RUNNING)
    for proc in running:
        _stop(proc)
    if _BUILDS is not None:
        _BUILDS.thread.join(timeout=30)


@pytest.fixture(scope="session")
def fio_builds() -> Iterator[dict[str, Path]]:
    """{version: binary} of every built fio; skips the tier when it cannot build here."""
    reason = missing_prerequisite()
    if reason is not None:
        pytest.skip(reason)
    builds = _BUILDS
    if builds is None:  # selected without the mark (e.g. by a fixture only): build now
        builds = _Builds()
        builds._run()
    else:
        builds.thread.join()
    failed = {v: r for v, r in builds.results.items() if isinstance(r, BaseException)}
    if failed:
        raise RuntimeError(f"fio builds failed: {failed}")
    yield {v: r for v, r in builds.results.items() if isinstance(r, Path)}
