"""Writes and deletes racing each other on every store: each must do what S3 says.

versitygw's POSIX back end keeps a key's folders as directories and removes those a DELETE
empties. A PUT creating (or linking into) such a directory at that moment was answered 409
ExistingObjectIsDirectory, and the loser of two DELETEs of one key got NoSuchKey. CI met
the first as a refused store probe: a publisher's probe lost that race against a runner
removing its own probe's scratch keys.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from fiolake.errors import StoreError
from fiolake.store import ObjectStore, S3Store
from tests.versitygw import STORES, lake_store

ROUNDS = 150


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    return lake_store(request, tmp_path)


def _together(*work: Callable[[], None]) -> list[str]:
    """Run each callable on its own thread at once; every error any of them raised."""
    errors: list[str] = []
    gate = threading.Barrier(len(work))

    def run(job: Callable[[], None]) -> None:
        gate.wait()
        try:
            job()
        except Exception as exc:  # noqa: BLE001 - the test reports every one
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(job,)) for job in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_creates_beside_deletes_that_empty_their_folders_all_succeed(
    store: ObjectStore,
) -> None:
    def create_fresh_keys() -> None:
        for i in range(ROUNDS):
            store.put(f"probe/create-{i}/key", b"new", if_none_match=True)
            store.delete(f"probe/create-{i}/key")

    def put_and_delete(name: str) -> Callable[[], None]:
        def work() -> None:
            for i in range(ROUNDS):
                store.put(f"probe/{name}-{i}/key", b"x")
                store.delete(f"probe/{name}-{i}/key")

        return work

    assert _together(create_fresh_keys, put_and_delete("a"), put_and_delete("b")) == []
    assert list(store.list("probe/")) == []


def test_two_deletes_of_one_key_at_once_both_succeed(store: ObjectStore) -> None:
    for i in range(ROUNDS):
        store.put(f"gone/{i}", b"x")

    def delete_every_key() -> None:
        for i in range(ROUNDS):
            store.delete(f"gone/{i}")

    assert _together(delete_every_key, delete_every_key, delete_every_key) == []
    assert list(store.list("gone/")) == []


@pytest.mark.stack  # versitygw
def test_a_folder_where_the_key_goes_is_named_with_the_fix(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    request.param = "versitygw"  # the one store here that keeps folders as directories
    store = lake_store(request, tmp_path)
    assert isinstance(store, S3Store)
    store.put("runs/r1/results.parquet", b"x")
    with pytest.raises(StoreError) as caught:
        store.put("runs/r1", b"y")
    assert str(caught.value) == (
        f"runs/r1: {store.settings.endpoint} answered 409 ExistingObjectIsDirectory on "
        "every try — a folder stands where this object goes (another key has it as its "
        "prefix, which a file-system back end such as versitygw's POSIX one cannot hold); "
        "remove that key or point the lake at another prefix"
    )
