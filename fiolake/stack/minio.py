"""The MinIO server binary (built from source at a pinned commit) and its health checks."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import requests

from fiolake.children import kill_group, sigint_deferred
from fiolake.config import Settings
from fiolake.errors import FiolakeError

log = logging.getLogger(__name__)

# At or after 18f97e70 (2025-10-23): older builds can let a conditional PUT overwrite.
MINIO_MODULE = "github.com/minio/minio"
MINIO_PIN = "v0.0.0-20260212201848-7aac2a2c5b7c"


def cache_dir() -> Path:
    """fiolake's build cache (FIOLAKE_CACHE_DIR, else ~/.cache/fiolake)."""
    return Settings.from_env().build_cache


def ensure_minio() -> Path:
    """The MinIO server binary; builds it with `go install` (≈2.5 min, once) if missing."""
    return go_install("MinIO", "minio", f"{MINIO_MODULE}@{MINIO_PIN}", "fiolake stack up")


def go_install(what: str, name: str, package: str, then: str) -> Path:
    """`<cache>/bin/<name>`, built once from the Go module proxy with `go install package`
    (`then`: the command to run again when Go is missing)."""
    cache = cache_dir()
    binary = cache / "bin" / name
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise FiolakeError(
            f"{what} is not built yet ({binary} missing) and Go is not installed: install Go "
            f"(https://go.dev/dl/ or `apt-get install golang`), then run `{then}` again"
        )
    env = dict(os.environ, GOBIN=str(cache / "bin"), GOPATH=str(cache / "gopath"))
    env.setdefault("GOFLAGS", "-modcacherw")
    log.info("building %s %s into %s (once, about 2-3 minutes)", what, package, binary)
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as errors:
        proc = None
        try:
            with sigint_deferred():  # a Ctrl-C as go starts waits until `proc` is set
                proc = subprocess.Popen(  # noqa: S603
                    [go, "install", package],
                    env=env,
                    stdout=errors,
                    stderr=subprocess.STDOUT,
                    text=True,
                    start_new_session=True,  # its own group: go and its compilers stop together
                )
            while True:
                try:
                    proc.wait(timeout=30)
                    break
                except subprocess.TimeoutExpired:
                    log.info("still building %s (%.0f s)", what, time.monotonic() - started)
        except BaseException:
            # Interrupted (Ctrl-C, a test's timeout): the build must not go on orphaned,
            # compiling beside the next one (issue 40: five at once on two cores).
            if proc is not None:
                kill_group(proc)  # reaps without Popen's lock, which the interrupt may hold
            raise
        errors.seek(0)
        output = errors.read()
    if proc.returncode != 0 or not binary.exists():
        tail = "\n".join(f"  | {line}" for line in output.splitlines()[-15:])
        raise FiolakeError(f"building {what} with `go install` failed:\n{tail}")
    log.info("built %s in %.0f s", what, time.monotonic() - started)
    return binary


def server_argv(
    binary: Path, *, address: str, console_address: str, certs_dir: Path, data_dir: Path
) -> list[str]:
    """Command line of a single-drive MinIO server that serves TLS only."""
    return [
        str(binary),
        "server",
        "--quiet",
        "--address",
        address,
        "--console-address",
        console_address,
        "--certs-dir",
        str(certs_dir),
        str(data_dir),
    ]


def server_env(root_user: str, root_password: str) -> dict[str, str]:
    """The environment MinIO runs with (no inherited secrets, no update checks)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "MINIO_ROOT_USER": root_user,
        "MINIO_ROOT_PASSWORD": root_password,
        "MINIO_UPDATE": "off",
        "MINIO_BROWSER_REDIRECT": "off",
        # The background scanner walks every object each minute (usage, healing, expiry
        # rules a local lake has none of): on a million-run lake it took 11 % of a core
        # while idle, load beside every run and benchmark on the same host (issue 44).
        "MINIO_SCANNER_SPEED": "slowest",
    }
    return env


def ready(endpoint: str, ca: Path) -> bool:
    """True if MinIO can serve reads and writes (its cluster health probe)."""
    try:
        resp = requests.get(f"{endpoint}/minio/health/cluster", verify=str(ca), timeout=2)
    except requests.RequestException:
        return False
    return resp.status_code == 200
