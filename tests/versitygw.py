"""versitygw, the second real S3 server of the test tier (fiolake.stack.versitygw).

`versitygw` (session) starts one on a free 127.0.0.1 port with TLS (a private CA from
fiolake.stack.bootstrap_tls) over a POSIX directory, with one bucket, and stops it at the
end. `s3_server` is MinIO (the session stack, admin keys) or versitygw: a test that takes
it runs on both real servers.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fiolake.s3client import S3Settings, s3_client
from fiolake.stack import versitygw as vgw
from fiolake.stack.bootstrap_tls import ensure_bootstrap_tls
from fiolake.stack.process import free_ports, wait_for
from fiolake.store import LocalStore, ObjectStore, S3Store


@dataclass(frozen=True)
class S3Server:
    """A running S3 server a test may write: its name, settings (root keys) and bucket."""

    name: str
    settings: S3Settings
    bucket: str
    log: Path | None = None

    def environ(self) -> dict[str, str]:
        """The variables that point fiolake at this server's bucket (an S3 lake)."""
        return {
            "FIOLAKE_LAKE": f"s3://{self.bucket}",
            "FIOLAKE_S3_ENDPOINT": self.settings.endpoint,
            "FIOLAKE_CA_BUNDLE": self.settings.ca_bundle or "",
            "AWS_ACCESS_KEY_ID": self.settings.access_key or "",
            "AWS_SECRET_ACCESS_KEY": self.settings.secret_key or "",
        }


@pytest.fixture(scope="session")
def versitygw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A running versitygw (built once into the cache) with the bucket `fiolake`."""
    root = tmp_path_factory.mktemp("versitygw")
    ca, crt, key = ensure_bootstrap_tls(root / "tls", ["127.0.0.1"])
    (root / "iam").mkdir()
    (root / "data").mkdir()
    (port,) = free_ports(1)
    access, secret = "vgw-root", secrets.token_urlsafe(24)
    argv = vgw.server_argv(vgw.ensure_versitygw(), address=f"127.0.0.1:{port}", cert=crt,
                           key=key, iam_dir=root / "iam", data_dir=root / "data")  # fmt: skip
    log_path = root / "versitygw.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(  # noqa: S603
            argv, env={**os.environ, **vgw.server_env(access, secret)}, stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        endpoint = f"https://127.0.0.1:{port}"
        wait_for(lambda: vgw.ready(endpoint, ca), timeout_s=30, what="versitygw",
                 log_path=log_path)  # fmt: skip
        settings = S3Settings(endpoint=endpoint, ca_bundle=str(ca), access_key=access,
                              secret_key=secret)  # fmt: skip
        s3_client(settings).create_bucket(Bucket="fiolake")
        yield S3Server("versitygw", settings, "fiolake", log_path)
    finally:
        proc.kill()
        proc.wait()


def real_server(request: pytest.FixtureRequest, name: str) -> S3Server:
    """The session's running S3 server `name`: "minio" (the stack, admin keys) or
    "versitygw"."""
    if name == "versitygw":
        server: S3Server = request.getfixturevalue("versitygw")
        return server
    stack = request.getfixturevalue("stack")
    return S3Server("minio", stack.s3_settings("admin"), stack.bucket)


# A store fixture's params: the local directory lake and both real S3 servers (marked
# `stack`: `make test-fast` skips them).
STORES = [
    "local",
    pytest.param("minio", marks=pytest.mark.stack),
    pytest.param("versitygw", marks=pytest.mark.stack),
]


def lake_store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    """A fresh, empty lake on the store `request.param` names (one of STORES)."""
    if request.param == "local":
        return LocalStore(tmp_path / "lake")
    server = real_server(request, request.param)
    return S3Store(server.bucket, f"t-{secrets.token_hex(6)}", server.settings)


@pytest.fixture(scope="session", params=["minio", "versitygw"])
def s3_server(request: pytest.FixtureRequest) -> S3Server:
    """Each real S3 server in turn: the session stack's MinIO, then versitygw."""
    return real_server(request, request.param)
