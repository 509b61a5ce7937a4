"""Runners publish a status object (fleet/<runner>.json) at start, per job, while idle and
when they stop; the aggregator reads the fleet back, aged by the store's clock."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from fiolake import layout
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.rows.fleet import fleet
from fiolake.fleet import RunnerStatus
from fiolake.runner.distributed.config import RunnerConfig
from fiolake.runner.distributed.fleet import FleetStatus
from fiolake.runner.distributed.service import Runner
from fiolake.store import LocalStore
from tests.signed_jobs import publish_signed

JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"


class FleetLog(LocalStore):
    """Keeps every status object written, in order (the store keeps only the last)."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.statuses: list[dict] = []

    def put(self, key: str, data: bytes, **kwargs: object) -> str:
        if key.startswith(layout.FLEET_PREFIX):
            self.statuses.append(json.loads(data))
        return super().put(key, data, **kwargs)


def test_a_runner_publishes_start_job_and_stop(tmp_path: Path) -> None:
    store = FleetLog(tmp_path / "lake")
    manifests, keyring = publish_signed(store, tmp_path / "k", "c-1", job=JOB)
    (tmp_path / "t").mkdir()
    config = RunnerConfig(
        backend="b", target_dir=tmp_path / "t", runner_id="runner 1/a", once=True,
        spool_dir=tmp_path / "spool", labels={"rack": "r7"},
    )  # fmt: skip
    stats = Runner(store, keyring, config, bucket="").serve()
    assert stats.ok == 1
    states = [s["state"] for s in store.statuses]
    assert states == ["starting", "running", "idle", "stopped"]
    running = store.statuses[1]
    assert running["job_id"] == manifests[0].job_id and running["lease_ttl_s"] == 60.0
    assert store.statuses[-1]["jobs"]["ok"] == 1 and store.statuses[0]["jobs"]["ok"] == 0
    assert list(store.list(layout.FLEET_PREFIX)) == ["fleet/runner_1_a.json"]

    with connect(str(tmp_path / "lake")) as lake:
        members, problems = fleet(lake)
    assert problems == []
    (member,) = members
    assert (member.status.runner, member.status.backend) == ("runner 1/a", "b")
    assert member.status.host == socket.gethostname()
    assert member.status.labels == {"rack": "r7"}
    assert member.status.state == "stopped" and not member.alive
    assert 0 <= member.age_s < 60


def test_an_idle_runner_speaks_every_few_minutes_only(tmp_path: Path) -> None:
    store = FleetLog(tmp_path / "lake")
    quiet = FleetStatus(store, "r", "b", {}, lambda: {"ok": 0}, every_s=3600)
    quiet.start()
    quiet.idle(did_work=False)
    assert [s["state"] for s in store.statuses] == ["starting"]  # too soon to repeat
    quiet.idle(did_work=True)
    chatty = FleetStatus(store, "r2", "b", {}, lambda: {"ok": 0}, every_s=0)
    chatty.idle(did_work=False)
    assert [s["state"] for s in store.statuses] == ["starting", "idle", "idle"]
    status = RunnerStatus.from_bytes(store.get(layout.fleet_key("r2"))[0])
    assert status.runner == "r2" and status.state == "idle"
