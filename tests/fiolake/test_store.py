"""Typed store errors, decided from the failure itself (never from message text)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
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
    store = S3Store("bucket", "", settings, client=s3_client(settings, attempts=1, timeout_s=2))
    with pytest.raises(StoreUnavailable, match=f"cannot reach https://127.0.0.1:{port}") as got:
        store.put("k", b"x")
    assert str(got.value).endswith(  # what to do about it, after the what
        " — check that the object store runs there and FIOLAKE_S3_ENDPOINT names it (the "
        "local stack: `fiolake stack up`); runners wait and retry on their own"
    )


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
    store = S3Store("bucket", "", settings, client=s3_client(settings, attempts=1, timeout_s=2))
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
    store = S3Store("bucket", "", settings, client=s3_client(settings, attempts=1, timeout_s=2))
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


# Keys whose order differs from a walk's: "/" sorts before "-", "." and letters, so a
# folder's keys interleave with its neighbours' (and a hidden file is no key).
WALK_KEYS = [
    "a/b-c/d",
    "a/b.x",
    "a/b/c",
    "a-b",
    "a.b/c",
    "ab/c",
    "commit-log/20260102T030405.678001Z-k.json",
    "commit-log/20260102T03h/20260102T030405.678000Z-j.json",
    "commit-log/20260102T04h/20260102T040000.000000Z-l.json",
    "z",
]


def test_local_listing_is_s3s_listing_after_any_key(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    for key in WALK_KEYS:
        store.put(key, b"x")
    (tmp_path / "a" / ".a.tmp").write_bytes(b"half-written")
    bounds = {None} | {k[:n] for k in WALK_KEYS for n in range(len(k) + 1)} | {"a/b~", "~"}
    for prefix in ("", "a/", "commit-log/", "a/b/", "nothing/"):
        for after in sorted(bounds, key=str):
            # S3: every key under the prefix that sorts after StartAfter, in key order
            expected = sorted(k for k in WALK_KEYS if k.startswith(prefix))
            expected = [k for k in expected if after is None or k > after]
            assert list(store.list(prefix, start_after=after)) == expected, (prefix, after)


class FolderRecordingStore(LocalStore):
    """A local store that records every directory its listings read."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.read: list[str] = []

    def _folder(self, path: str) -> Sequence[str]:
        self.read.append(Path(path).relative_to(self.root).as_posix())
        return super()._folder(path)


def test_a_local_listing_after_a_key_reads_no_folder_before_it(tmp_path: Path) -> None:
    store = FolderRecordingStore(tmp_path)
    for key in WALK_KEYS:
        store.put(key, b"x")
    assert list(store.list("commit-log/", start_after="commit-log/20260102T040000")) == [
        "commit-log/20260102T04h/20260102T040000.000000Z-l.json"
    ]
    assert store.read == ["commit-log", "commit-log/20260102T04h"]
    store.read.clear()
    assert list(store.list("", start_after="a/b/c")) == ["ab/c", *WALK_KEYS[6:]]
    # not a/b-c/ nor a.b/: every key in them sorts before a/b/c ("-" and "." before "/")
    assert store.read == [".", "a", "a/b", "ab", "commit-log", *LOG_HOURS]


LOG_HOURS = ["commit-log/20260102T03h", "commit-log/20260102T04h"]
