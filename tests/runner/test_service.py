"""The runner loop in-process, for the one fault a real store cannot be made to produce on
cue: another runner taking the lease over while this one is still uploading."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from fiolake import layout
from fiolake.campaigns import plan_campaign, publish_manifests
from fiolake.runner.service import Runner, RunnerConfig
from fiolake.signing import Keyring, LocalSigner
from fiolake.store import LocalStore

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
    signer = LocalSigner.generate(tmp_path / "k")
    manifests = plan_campaign(
        [("n", JOB)],
        ["b"],
        campaign_id="c-1",
        repeat=1,
        runtime_s=None,
        size_bytes=None,
        bucket="",
        expires_in=timedelta(hours=1),
    )
    publish_manifests(store, manifests, signer)
    keyring = Keyring()
    keyring.add(signer.keyid, signer.public_key_bytes(), persist=False)
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
