"""Typed store errors, decided from the failure itself (never from message text)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from fiolake.errors import AccessDenied, NotFound, PreconditionFailed, StoreUnavailable
from fiolake.s3client import S3Settings, s3_client
from fiolake.store import LocalStore, S3Store


def test_an_unreachable_endpoint_is_unavailable_not_denied() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    settings = S3Settings(endpoint=f"https://127.0.0.1:{port}", access_key="a", secret_key="b")
    store = S3Store("bucket", "", settings, client=s3_client(settings, retries=1, timeout_s=2))
    with pytest.raises(StoreUnavailable, match=f"cannot reach https://127.0.0.1:{port}"):
        store.put("k", b"x")


def test_a_tls_session_cut_mid_handshake_is_unavailable_not_a_trust_failure() -> None:
    # A listener that reads the ClientHello and hangs up: what a dropped answer looks like.
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def hang_up() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(4096)
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    settings = S3Settings(endpoint=f"https://127.0.0.1:{port}", access_key="a", secret_key="b")
    store = S3Store("bucket", "", settings, client=s3_client(settings, retries=1, timeout_s=2))
    try:
        with pytest.raises(StoreUnavailable, match=f"cannot reach https://127.0.0.1:{port}"):
            store.put("k", b"x")
    finally:
        server.close()


def test_missing_credentials_are_denied_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    settings = S3Settings(endpoint="https://127.0.0.1:9")
    store = S3Store("bucket", "", settings, client=s3_client(settings, retries=1, timeout_s=2))
    with pytest.raises(AccessDenied, match="^no object-store credentials for s3://bucket — set"):
        store.put("k", b"x")


def test_local_store_conditions(tmp_path: Path) -> None:
    store = LocalStore(str(tmp_path))
    etag = store.put("a/b", b"1", if_none_match=True)
    with pytest.raises(PreconditionFailed):
        store.put("a/b", b"2", if_none_match=True)
    with pytest.raises(PreconditionFailed):
        store.put("a/b", b"2", if_match="stale")
    store.put("a/b", b"2", if_match=etag)
    with pytest.raises(NotFound):
        store.get("a/c")


def test_local_store_delete_location_and_settings(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put("compacted/x.parquet", b"1")
    assert store.location("compacted/x.parquet") == f"{tmp_path}/compacted/x.parquet"
    assert Path(store.location("compacted/x.parquet")).read_bytes() == b"1"
    assert store.settings is None  # no S3 endpoint: outside readers open the path
    store.delete("compacted/x.parquet")
    assert store.head("compacted/x.parquet") is None
    store.delete("compacted/x.parquet")  # gone already is fine


def test_s3_store_location_is_an_s3_url_below_its_prefix() -> None:
    settings = S3Settings(endpoint="https://127.0.0.1:9")
    store = S3Store("bucket", "/lake/a/", settings, client=object())
    assert store.location("results/runs/x.parquet") == "s3://bucket/lake/a/results/runs/x.parquet"
    assert store.settings is settings
