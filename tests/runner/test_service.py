"""The runner loop in-process, for the one fault a real store cannot be made to produce on
cue: another runner taking the lease over while this one is still uploading."""

from __future__ import annotations

import json
from pathlib import Path

from fiolake import layout
from fiolake.runner.distributed.config import RunnerConfig
from fiolake.runner.distributed.service import Runner
from fiolake.store import LocalStore
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
