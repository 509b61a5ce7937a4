"""One compactor at a time: the lock, its expiry after a kill, its fencing, `--wait`, and
two real `fiolake lake compact` processes started together on MinIO."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from fiolake import layout
from fiolake.aggregator.lake import delta
from fiolake.aggregator.lake.compact_lock import CompactionLock, try_acquire
from fiolake.cli import cli
from fiolake.errors import CompactionBusy, LakeError
from fiolake.store import LocalStore, ObjectStore, open_store
from tests.aggregator import lakegen
from tests.versitygw import STORES, lake_store

BUSY = re.compile(
    r"compaction already running on (\S+) since (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) — wait for "
    r"it, or run `fiolake lake compact --wait` \(a killed compactor's lock expires in (\d+) s\)"
)
HOLD = """
import sys, time
from fiolake.aggregator.lake import delta
from fiolake.aggregator.lake.compact_lock import try_acquire
from fiolake.store import LocalStore
lock = try_acquire(LocalStore(sys.argv[1]), ttl_s=float(sys.argv[2]))
print(lock.token, flush=True)
time.sleep(600)
"""


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    """An empty lake on each real store: a local directory, MinIO, versitygw."""
    return lake_store(request, tmp_path)


def test_a_held_lock_refuses_a_second_compactor_with_its_host_and_start(
    store: ObjectStore,
) -> None:
    first = try_acquire(store)
    try:
        with pytest.raises(CompactionBusy) as busy:
            try_acquire(store)
        m = BUSY.fullmatch(str(busy.value))
        assert m, str(busy.value)
        assert (m.group(1), m.group(2), m.group(3)) == (first.body.host, first.body.since, "60")
    finally:
        first.release()
    second = try_acquire(store)  # released: taken at once, with the next fencing token
    assert second.token == first.token + 1 == 2
    second.release()


@pytest.mark.slow  # waits on real time or a real fio run (2-4 s): out of the fast tier
def test_a_killed_compactors_lock_expires_and_is_taken_over(tmp_path: Path) -> None:
    holder = subprocess.Popen(  # noqa: S603
        [sys.executable, "-c", HOLD, str(tmp_path), "1"], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "1"
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    store = LocalStore(tmp_path)
    with pytest.raises(CompactionBusy):
        try_acquire(store)  # not expired yet: a killed holder looks like a live one
    time.sleep(2.2)
    taken = try_acquire(store)
    assert taken.token == 2
    taken.release()


def _taken_once_expired(store: ObjectStore, within_s: float = 30.0):  # noqa: ANN202
    """The lock, taken as soon as the stalled holder's has expired. Expiry is judged by the
    store's clock, whose offset carries an error bound (second-granular Last-Modified on
    versitygw): on a loaded host the bound, not the TTL, decides when that is, so wait for
    the event rather than a fixed sleep (it failed under load 11 with a 2.2 s sleep)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            return try_acquire(store)
        except CompactionBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class _RenewsWhileFenceReads(LocalStore):
    """A store whose read of the lock lets the holder's renewal run before it returns: the
    interleaving that made a compactor fence itself off (a renewal landing between the
    fence's read and its comparison)."""

    lock: CompactionLock | None = None

    def get(self, key: str):  # noqa: ANN201 - LocalStore.get's own
        found = super().get(key)
        if key == layout.COMPACTION_LOCK_KEY and self.lock is not None:
            renewal = threading.Thread(target=self.lock._renew_once)
            renewal.start()
            renewal.join(0.5)  # done at once where fence leaves it free to run
        return found


def test_a_renewal_while_the_holder_fences_is_not_a_takeover(tmp_path: Path) -> None:
    store = _RenewsWhileFenceReads(tmp_path / "lake")
    lock = try_acquire(store)
    try:
        store.lock = lock
        lock.fence()  # its own renewal in between: still its lock
        store.lock = None
        lock.fence()
        assert lock.token == 1 and _read_lock(store)["nonce"] == lock.body.nonce
    finally:
        store.lock = None
        lock.release()


def _read_lock(store: ObjectStore) -> dict:
    return json.loads(store.get(layout.COMPACTION_LOCK_KEY)[0])


@pytest.mark.slow  # waits on real time or a real fio run (2-4 s): out of the fast tier
def test_a_compactor_that_lost_its_lock_is_fenced_off(store: ObjectStore) -> None:
    stalled = try_acquire(store, ttl_s=1)
    stalled._stop.set()  # as if the process were stopped longer than the TTL
    stalled._thread.join()
    taker = _taken_once_expired(store)
    try:
        with pytest.raises(LakeError) as fenced:
            stalled.fence()
        assert str(fenced.value) == (
            "the compaction lock changed hands (token 1): this compaction stops before "
            "writing more — run `fiolake lake compact` again"
        )
        taker.fence()  # the holder's own check passes
    finally:
        taker.release()


@pytest.mark.slow  # waits on real time or a real fio run (2-4 s): out of the fast tier
def test_compact_exits_1_while_another_runs_and_waits_with_wait(tmp_path: Path) -> None:
    lakegen.write_campaign(lakegen.local_store(tmp_path), "c1", {"a": {("j", "read"): {}}}, 2)
    store = LocalStore(tmp_path)
    held = try_acquire(store)
    busy = CliRunner().invoke(cli, ["lake", "compact", "--lake", str(tmp_path)])
    assert busy.exit_code == 1
    assert BUSY.fullmatch(busy.stderr.removeprefix("Error: ").rstrip("\n")), busy.stderr
    assert not list(store.list(layout.GENERATIONS_PREFIX))  # nothing written
    threading.Timer(3, held.release).start()
    waited = CliRunner().invoke(cli, ["lake", "compact", "--lake", str(tmp_path), "--wait"])
    assert waited.exit_code == 0, waited.output
    assert waited.stderr.startswith(f"waiting: compaction already running on {held.body.host}")
    assert "generation 1: appended" in waited.stderr


@pytest.mark.stack
def test_two_compactors_started_together_on_minio(stack) -> None:  # noqa: ANN001
    url = f"{stack.lake}/lock-{secrets.token_hex(4)}"
    store = open_store(url, stack.s3_settings("admin"))
    backends = {"a": {("j1", "read"): {"iops": 1000}}, "b": {("j1", "read"): {"iops": 800}}}
    lakegen.write_campaign(store, "c1", backends, 3)
    env = {**os.environ, **stack.environ("compactor")}
    argv = [str(Path(sys.executable).with_name("fiolake")), "lake", "compact", "--lake", url]
    procs = [
        subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)  # noqa: S603
        for _ in range(2)
    ]
    outcomes = sorted((p.wait(120), p.stderr.read() if p.stderr else "") for p in procs)
    assert [code for code, _ in outcomes] == [0, 1], outcomes
    assert outcomes[0][1].startswith("generation 1: appended 36 run(s) × table to 6 Delta table(s)")
    loser = outcomes[1][1]
    assert BUSY.fullmatch(loser.removeprefix("Error: ").rstrip("\n")), loser
    written = list(store.list(layout.GENERATIONS_PREFIX))  # one record, its ids and cases
    assert [k for k in written if layout.compaction_generation(k)] == [layout.generation_key(1)]
    assert [layout.generation_object(k) for k in written] == [1, 1, 1]
    tables = [delta.open_table(store, t) for t in (*layout.TABLES, delta.COMMITS)]
    assert sum(1 for t in tables if t is not None) == 5  # 4 tables with rows, and commits
    for table in filter(None, tables):
        rows = table.to_pyarrow_table()
        # No row twice: the loser appended nothing.
        distinct = duckdb.sql("SELECT count(*) FROM (SELECT DISTINCT * FROM rows)").fetchone()
        assert distinct == (rows.num_rows,), table.table_uri
