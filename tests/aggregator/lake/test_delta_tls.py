"""delta-rs gets the lake's CA per call: nothing process-wide changes while it runs.

While one thread compacts (delta-rs calls over TLS to the stack's MinIO, private CA 1),
another thread (a) talks S3 through boto3 to a second MinIO whose certificate another CA
signed, (b) opens TLS connections to the lake's MinIO with Python's default trust, and
(c) reads SSL_CERT_FILE. (a) always works, (b) always fails certificate verification
(the lake's CA is trusted by nobody but its own calls), (c) never changes. When the CA
was put in SSL_CERT_FILE around delta-rs calls, (b) succeeded inside that window.
"""

from __future__ import annotations

import os
import secrets
import socket
import ssl
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from fiolake.aggregator.lake import delta
from fiolake.aggregator.lake.compact import compact
from fiolake.store import S3Settings, S3Store, open_store
from tests.aggregator import lakegen
from tests.own_minio import own_minio

pytestmark = pytest.mark.stack


@pytest.fixture
def other_minio(tmp_path: Path) -> Iterator[S3Settings]:
    """A second MinIO whose certificate a CA of its own signed (not the stack's)."""
    with own_minio(tmp_path, tmp_path / "data", user="other-root") as settings:
        yield settings


def _default_trust_handshake(endpoint: str) -> str:
    """'verified' or 'refused': a TLS handshake with Python's default trust store."""
    url = urlsplit(endpoint)
    context = ssl.create_default_context()  # reads SSL_CERT_FILE when it is set
    try:
        with socket.create_connection((url.hostname, url.port), timeout=5) as sock:
            with context.wrap_socket(sock, server_hostname=url.hostname):
                return "verified"
    except ssl.SSLCertVerificationError:
        return "refused"


def test_delta_rs_calls_change_no_other_threads_tls(stack, other_minio: S3Settings) -> None:  # noqa: ANN001
    url = f"{stack.lake}/tls-{secrets.token_hex(4)}"
    lake = open_store(url, stack.s3_settings("admin"))
    lakegen.write_campaign(lake, "c1", {"a": {("j1", "read"): {}}, "b": {("j1", "read"): {}}}, 3)
    other = S3Store("other", "", other_minio)
    other.client.create_bucket(Bucket="other")
    assert os.environ.get("SSL_CERT_FILE") != stack.s3_settings().ca_bundle
    cert_file = os.environ.get("SSL_CERT_FILE")
    seen: Counter[str] = Counter()
    done = threading.Event()

    def elsewhere() -> None:
        i = 0
        while not done.is_set():
            i += 1
            other.put(f"k{i}", b"x")  # boto3, another CA: must keep working
            assert other.get(f"k{i}")[0] == b"x"
            seen["boto3 ok"] += 1
            seen[_default_trust_handshake(stack.endpoint)] += 1
            seen["env changed"] += os.environ.get("SSL_CERT_FILE") != cert_file

    thread = threading.Thread(target=elsewhere)
    thread.start()
    try:
        for i in range(3):  # each compaction makes dozens of delta-rs calls
            lakegen.write_run(lake, run_id=f"late{i}", job_id=f"c1-late-{i}")
            compact(lake, grace=timedelta(0))
        assert delta.open_table(lake, "runs") is not None
    finally:
        done.set()
        thread.join()
    assert seen["boto3 ok"] > 10 and seen["refused"] > 10, seen
    assert (seen["verified"], seen["env changed"]) == (0, 0), seen
