"""A stack re-created on the same address, beside the same keyring cache, loses no job.

Before key ids carried the key's fingerprint, the second stack's transit key had the same
id as the first one's (`vault:manifests:v1`), the runner verified against the cached
first key, and every job of the new campaign was committed `rejected: bad signature`.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from fiolake.campaign_progress import campaign_status
from fiolake.campaigns import plan_campaign, publish_manifests, store_bucket
from fiolake.config import Settings
from fiolake.runner.distributed.config import RunnerConfig
from fiolake.runner.distributed.service import Runner
from fiolake.stack.local import stack_down, stack_up
from fiolake.stack.process import free_ports

pytestmark = [pytest.mark.stack, pytest.mark.slow]

JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"


def campaign_on_fresh_stack(
    tmp_path: Path, name: str, ports: list[int], keyring: Path
) -> list[str]:
    state = tmp_path / name
    try:
        env = stack_up(
            state,
            minio_port=ports[0],
            console_port=ports[1],
            bao_port=ports[2],
            bao_cluster_port=ports[3],
        )
        publisher = Settings.from_env(env.environ("publisher"))
        store = publisher.store()
        manifests = plan_campaign(
            [("n", JOB)],
            ["b"],
            campaign_id=f"c-{name}",
            repeat=4,
            runtime_s=None,
            size_bytes=None,
            bucket=store_bucket(store),
            expires_in=timedelta(hours=1),
        )
        publish_manifests(store, manifests, publisher.signer())
        runner = Settings.from_env({**env.environ("runner"), "FIOLAKE_KEYRING": str(keyring)})
        target = tmp_path / "target"
        target.mkdir(exist_ok=True)
        config = RunnerConfig(
            backend="b",
            target_dir=target,
            runner_id=f"r-{name}",
            spool_dir=tmp_path / f"spool-{name}",
            once=True,
        )
        Runner(runner.store(), runner.keyring(), config, store_bucket(store)).serve()
        return [j.state for j in campaign_status(store, f"c-{name}")]
    finally:
        stack_down(state, purge=True)


def test_second_stack_on_the_same_address_commits_every_job(tmp_path: Path) -> None:
    ports = free_ports(4)
    keyring = tmp_path / "keyring.json"  # shared by both, as ~/.cache/fiolake is
    assert campaign_on_fresh_stack(tmp_path, "first", ports, keyring) == ["ok"] * 4
    assert campaign_on_fresh_stack(tmp_path, "second", ports, keyring) == ["ok"] * 4
