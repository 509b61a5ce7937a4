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


class VersityServer:
    """A versitygw on 127.0.0.1 over TLS (a private CA) serving `root`/data, which can be
    restarted on its port with its data (the fault history's store restarts)."""

    def __init__(self, root: Path, bucket: str = "fiolake"):
        self.root, self.bucket = root, bucket
        self.ca, self.crt, self.key = ensure_bootstrap_tls(root / "tls", ["127.0.0.1"])
        (root / "iam").mkdir(parents=True, exist_ok=True)
        (root / "data").mkdir(parents=True, exist_ok=True)
        (self.port,) = free_ports(1)
        self.access, self.secret = "vgw-root", secrets.token_urlsafe(24)
        self.log_path = root / "versitygw.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.settings = S3Settings(endpoint=f"https://127.0.0.1:{self.port}",
                                   ca_bundle=str(self.ca), access_key=self.access,
                                   secret_key=self.secret)  # fmt: skip

    def start(self) -> None:
        """Start it and wait until it answers; the bucket is made on the first start."""
        argv = vgw.server_argv(vgw.ensure_versitygw(), address=f"127.0.0.1:{self.port}",
                               cert=self.crt, key=self.key, iam_dir=self.root / "iam",
                               data_dir=self.root / "data")  # fmt: skip
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(  # noqa: S603
                argv, env={**os.environ, **vgw.server_env(self.access, self.secret)},
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        wait_for(lambda: vgw.ready(self.settings.endpoint, self.ca), timeout_s=30,
                 what="versitygw", log_path=self.log_path)  # fmt: skip
        if not (self.root / "data" / self.bucket).exists():
            s3_client(self.settings).create_bucket(Bucket=self.bucket)

    def stop(self) -> None:
        """Kill it (a crash, as the fault history's restarts are) and reap it."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self) -> None:
        """Kill it and start it again on the same port with the same data."""
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def versitygw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A running versitygw (built once into the cache) with the bucket `fiolake`."""
    server = VersityServer(tmp_path_factory.mktemp("versitygw"))
    try:
        server.start()
        yield S3Server("versitygw", server.settings, server.bucket, server.log_path)
    finally:
        server.stop()


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
