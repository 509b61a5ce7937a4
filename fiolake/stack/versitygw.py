"""versitygw, a second real S3 server (Versity's S3 gateway over a POSIX directory).

fiolake's tests run the store, lease, commit and compaction protocols on it beside MinIO
(docs/stores.md). Built once into the cache from the Go module proxy, like MinIO.
"""

from __future__ import annotations

import os
from pathlib import Path

import requests

from fiolake.stack.minio import go_install

# >= v1.1.0 for If-None-Match/If-Match at all; the posix-backend race fix (PR #2288) is in
# v1.8.0 (docs/stores.md).
VERSITYGW_MODULE = "github.com/versity/versitygw/cmd/versitygw"
VERSITYGW_PIN = "v1.8.0"


def ensure_versitygw() -> Path:
    """The versitygw binary; builds it with `go install` (≈2 min, once) if missing."""
    return go_install("versitygw", "versitygw", f"{VERSITYGW_MODULE}@{VERSITYGW_PIN}", "pytest")


def server_argv(
    binary: Path, *, address: str, cert: Path, key: Path, iam_dir: Path, data_dir: Path
) -> list[str]:
    """Command line of a versitygw serving `data_dir` (one bucket a directory) over TLS."""
    return [
        str(binary),
        "--port",
        address,
        "--cert",
        str(cert),
        "--key",
        str(key),
        "--iam-dir",
        str(iam_dir),
        "posix",
        str(data_dir),
    ]


def server_env(access_key: str, secret_key: str) -> dict[str, str]:
    """The environment versitygw runs with: its root keys, nothing inherited."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "ROOT_ACCESS_KEY": access_key,
        "ROOT_SECRET_KEY": secret_key,
    }


def ready(endpoint: str, ca: Path) -> bool:
    """True once versitygw answers HTTPS (any S3 answer, 403 for an unsigned request)."""
    try:
        requests.get(f"{endpoint}/", verify=str(ca), timeout=2)
    except requests.RequestException:
        return False
    return True
