"""A MinIO of a test's own, beside the session stack's: TLS from a private CA of its own, on
free 127.0.0.1 ports, over a data directory the test chooses (a second trust domain, a
drive the test fills), killed and reaped when the test ends."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from fiolake.s3client import S3Settings
from fiolake.stack import minio
from fiolake.stack.bootstrap_tls import ensure_bootstrap_tls
from fiolake.stack.process import free_ports, wait_for


@contextlib.contextmanager
def own_minio(root: Path, data_dir: Path, user: str = "own-root") -> Iterator[S3Settings]:
    """Start a MinIO serving `data_dir` (its TLS files and log under `root`), wait until it
    answers, and yield its settings (root keys, its CA)."""
    ca, crt, key = ensure_bootstrap_tls(root / "tls", ["127.0.0.1"])
    certs = root / "certs"  # the names MinIO looks for
    certs.mkdir()
    shutil.copy(crt, certs / "public.crt")
    shutil.copy(key, certs / "private.key")
    port, console = free_ports(2)
    password = secrets.token_urlsafe(24)
    argv = minio.server_argv(minio.ensure_minio(), address=f"127.0.0.1:{port}",
                             console_address=f"127.0.0.1:{console}", certs_dir=certs,
                             data_dir=data_dir)  # fmt: skip
    env = {**os.environ, **minio.server_env(user, password)}
    log_path = root / "minio.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
    try:
        endpoint = f"https://127.0.0.1:{port}"
        wait_for(lambda: minio.ready(endpoint, ca), timeout_s=30, what="the test's MinIO",
                 log_path=log_path)  # fmt: skip
        yield S3Settings(endpoint=endpoint, access_key=user, secret_key=password, ca_bundle=str(ca))
    finally:
        proc.kill()
        proc.wait()
