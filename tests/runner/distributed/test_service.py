"""The runner loop in-process, for the one fault a real store cannot be made to produce on
cue: another runner taking the lease over while this one is still uploading."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

from fiolake import layout
from fiolake.runner.distributed.config import RunnerConfig
from fiolake.runner.distributed.service import Runner
from fiolake.store import LocalStore
from tests.runner.conftest import lock_is_held
from tests.signed_jobs import publish_signed

JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"


class TakeoverDuringUpload(LocalStore):
    """Rewrites the job's lease as another runner's on the first results upload."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.stolen = False

    def put(self, key: str, data: bytes, **kwargs: object) -> str:
        if key.startswith(layout.RESULTS_PREFIX) and not self.stolen:
            self.stolen = True
            for claim in self.list(layout.CLAIMS_PREFIX):
                lease = json.loads(self.get(claim)[0])
                lease.update(runner="thief", epoch=lease["epoch"] + 1, nonce="stolen")
                super().put(claim, json.dumps(lease).encode())
        return super().put(key, data, **kwargs)


def test_lease_taken_over_during_upload_means_no_commit(tmp_path: Path) -> None:
    store = TakeoverDuringUpload(tmp_path / "lake")
    manifests, keyring = publish_signed(store, tmp_path / "k", "c-1", job=JOB)
    (tmp_path / "t").mkdir()  # `fiolake runner` checks --dir at start; the library trusts it
    config = RunnerConfig(
        backend="b",
        target_dir=tmp_path / "t",
        runner_id="me",
        spool_dir=tmp_path / "spool",
        once=True,
    )
    stats = Runner(store, keyring, config, bucket="").serve()
    assert store.stolen
    assert (stats.ok, stats.lost) == (0, 1)
    assert list(store.list(layout.COMMITS_PREFIX)) == []
    assert list((tmp_path / "spool").iterdir()) == []  # the orphan is not re-uploaded later


class LockWatchingStore(LocalStore):
    """Notes, at each results upload and commit, whether the host lock was held, and
    counts the listings of open jobs."""

    def __init__(self, root: Path, lock: Path):
        super().__init__(root)
        self.lock = lock
        self.held_at: dict[str, bool] = {}
        self.job_listings = 0
        self.started = threading.Event()  # the runner said it is starting (fleet status)

    def put(self, key: str, data: bytes, **kwargs: object) -> str:
        if key.startswith(layout.FLEET_PREFIX):
            self.started.set()
        for prefix in (layout.RESULTS_PREFIX, layout.COMMITS_PREFIX):
            if key.startswith(prefix):
                self.held_at.setdefault(prefix, lock_is_held(self.lock))
        return super().put(key, data, **kwargs)

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[str]:
        self.job_listings += prefix.startswith(layout.JOBS_PREFIX)
        return super().list(prefix, start_after=start_after)

    def list_children(self, prefix: str) -> Iterator[str]:
        self.job_listings += prefix.startswith(layout.JOBS_PREFIX)
        return super().list_children(prefix)


def _config(tmp_path: Path, lock: Path, **kwargs: object) -> RunnerConfig:
    (tmp_path / "t").mkdir(exist_ok=True)
    return RunnerConfig(
        backend="b",
        target_dir=tmp_path / "t",
        runner_id="me",
        spool_dir=tmp_path / "spool",
        host_lock=lock,
        **kwargs,  # type: ignore[arg-type]
    )


def test_upload_and_commit_happen_under_the_host_lock(tmp_path: Path) -> None:
    """The next run on the host must not measure this run's upload as busy CPU."""
    lock = tmp_path / "host.lock"
    store = LockWatchingStore(tmp_path / "lake", lock)
    _, keyring = publish_signed(store, tmp_path / "k", "c-1", job=JOB)
    stats = Runner(store, keyring, _config(tmp_path, lock, once=True), bucket="").serve()
    assert stats.ok == 1
    assert store.held_at == {layout.RESULTS_PREFIX: True, layout.COMMITS_PREFIX: True}
    assert not lock_is_held(lock)  # and let go once committed


def test_an_idle_runner_does_not_poll_while_another_fio_holds_the_lock(tmp_path: Path) -> None:
    from fiolake.runner.host.lock import HostLock

    lock = tmp_path / "host.lock"
    store = LockWatchingStore(tmp_path / "lake", lock)
    _, keyring = publish_signed(store, tmp_path / "k", "c-1", job=JOB)
    store.job_listings = 0  # publishing looked too
    other = HostLock(lock, holder="another runner's fio")
    assert other.acquire() is not None
    runner = Runner(store, keyring, _config(tmp_path, lock, poll_s=0.05, max_jobs=1), bucket="")
    done = threading.Thread(target=runner.serve)
    done.start()
    assert store.started.wait(30)
    done.join(1.0)  # twenty poll intervals while the other fio measures
    assert done.is_alive() and store.job_listings == 0
    other.release()
    done.join(30)  # the kernel wakes the waiter: it lists, claims and runs the job
    assert not done.is_alive() and runner.stats.ok == 1 and store.job_listings >= 1
