"""Discovery costs O(open work of my backend): committed history and other backends' jobs
are never listed or HEADed once their campaign is marked done."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from fiolake import layout
from fiolake.campaign_progress import campaign_status
from fiolake.campaigns import plan_campaign, publish_manifests
from fiolake.commits import new_commit
from fiolake.errors import UsageProblem
from fiolake.runner.distributed.config import RunnerConfig
from fiolake.runner.distributed.service import Runner
from fiolake.signing import Keyring, LocalSigner, load_public_key, public_key_path
from fiolake.store import LocalStore, ObjectInfo

JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"


class CountingStore(LocalStore):
    """A real local lake that counts requests by kind and prefix (instrumentation only)."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.calls: Counter[str] = Counter()
        self.listed: list[str] = []

    def head(self, key: str) -> ObjectInfo | None:
        self.calls["head"] += 1
        return super().head(key)

    def list(self, prefix: str) -> Iterator[str]:
        self.calls["list"] += 1
        self.listed.append(prefix)
        return super().list(prefix)

    def list_children(self, prefix: str) -> Iterator[str]:
        self.calls["list"] += 1
        self.listed.append(prefix)
        return super().list_children(prefix)


@pytest.fixture
def signer(tmp_path: Path) -> LocalSigner:
    return LocalSigner.generate(tmp_path / "key")


def publish(store: LocalStore, signer: LocalSigner, campaign: str, backend: str, n: int) -> None:
    manifests = plan_campaign(
        [("p", JOB)],
        [backend],
        campaign_id=campaign,
        repeat=n,
        runtime_s=None,
        size_bytes=None,
        bucket="",
        expires_in=timedelta(hours=1),
    )
    publish_manifests(store, manifests, signer)


def runner(store: LocalStore, signer: LocalSigner, tmp_path: Path, backend: str) -> Runner:
    ring = Keyring()
    ring.add(*load_public_key(public_key_path(tmp_path / "key")), persist=False)
    config = RunnerConfig(backend, tmp_path / "target", "r1", tmp_path / "spool")
    return Runner(store, ring, config, "")


def commit_all(store: LocalStore, campaign: str) -> None:
    for job in campaign_status(store, campaign):
        marker = new_commit(job.job_id, f"run-{job.job_id}", campaign, "r0", "ok")
        store.put(layout.commit_key(job.job_id), marker.to_bytes(), if_none_match=True)


def test_a_runner_sees_only_its_backends_open_jobs(tmp_path: Path, signer: LocalSigner) -> None:
    store = CountingStore(tmp_path / "lake")
    publish(store, signer, "c-a", "a", 3)
    publish(store, signer, "c-b", "b", 5)
    store.calls.clear()
    store.listed.clear()
    found = list(runner(store, signer, tmp_path, "a").open_jobs())
    assert sorted(campaign for campaign, _, _ in found) == ["c-a"] * 3
    assert store.calls["head"] == 3
    assert not [p for p in store.listed if "/b/" in p or "c-b" in p]


def test_history_costs_nothing_once_a_campaign_is_done(tmp_path: Path, signer: LocalSigner) -> None:
    store = CountingStore(tmp_path / "lake")
    for i in range(4):
        publish(store, signer, f"c-old-{i}", "a", 25)
        commit_all(store, f"c-old-{i}")
    first = runner(store, signer, tmp_path, "a")
    assert list(first.open_jobs()) == []
    assert sorted(store.list(layout.done_prefix("a"))) == [
        layout.done_key("a", f"c-old-{i}") for i in range(4)
    ]
    publish(store, signer, "c-new", "a", 2)
    store.calls.clear()
    store.listed.clear()
    fresh = runner(store, signer, tmp_path, "a")  # a scale-to-zero runner: no memory
    assert len(list(fresh.open_jobs())) == 2
    assert store.calls == Counter(head=2, list=4)  # done/, campaigns, c-new's jobs, jobs/
    assert not [p for p in store.listed if "c-old" in p]


def test_a_campaign_id_is_never_reused(tmp_path: Path, signer: LocalSigner) -> None:
    store = LocalStore(tmp_path / "lake")
    publish(store, signer, "c-1", "a", 1)
    with pytest.raises(UsageProblem, match="^campaign c-1 already has jobs in .* — campaign ids"):
        publish(store, signer, "c-1", "b", 1)


def test_first_layout_manifests_are_still_found(tmp_path: Path, signer: LocalSigner) -> None:
    store = LocalStore(tmp_path / "lake")
    publish(store, signer, "c-new", "a", 1)
    [(_, job_id, key)] = list(runner(store, signer, tmp_path, "a").open_jobs())
    legacy = layout.job_key("c-legacy", "c-legacy-job")
    store.put(legacy, store.get(key)[0])  # where the first layout put manifests
    found = {k for _, _, k in runner(store, signer, tmp_path, "a").open_jobs()}
    assert found == {key, legacy}


def test_repetitions_are_planned_and_taken_interleaved(tmp_path: Path, signer: LocalSigner) -> None:
    """publish --repeat 3 over two job files and two backends: ABAB, not AAABBB."""
    manifests = plan_campaign(
        [("p", JOB), ("q", JOB)],
        ["a", "b"],
        campaign_id="c-mix",
        repeat=3,
        runtime_s=None,
        size_bytes=None,
        bucket="",
        expires_in=timedelta(hours=1),
    )
    planned = [(m.repetition, m.profile, m.backend) for m in manifests]
    assert planned[:4] == [(0, "p", "a"), (0, "p", "b"), (0, "q", "a"), (0, "q", "b")]
    assert [m.sequence for m in manifests] == list(range(12))
    assert [r for r, _, _ in planned] == sorted(r for r, _, _ in planned)
    store = LocalStore(tmp_path / "lake")
    publish_manifests(store, manifests, signer)
    for _ in range(5):  # random within a repetition, never a later one first
        taken = [job_id for _, job_id, _ in runner(store, signer, tmp_path, "a").open_jobs()]
        reps = [int(job_id.rsplit("-r", 1)[1]) for job_id in taken]
        assert reps == [0, 0, 1, 1, 2, 2], taken


def test_a_campaign_still_being_published_is_not_marked_done(
    tmp_path: Path, signer: LocalSigner
) -> None:
    """A local lake's campaign folder exists before its first manifest lands (LocalStore.put
    makes the folder, then a temp file, then links it): a runner listing in between must
    not call the campaign done, or its job never runs."""
    store = LocalStore(tmp_path / "lake")
    folder = tmp_path / "lake" / layout.backend_campaign_prefix("fast", "c-inflight")
    folder.mkdir(parents=True)
    (folder / ".c-inflight-p-fast-r0.json.x.tmp").write_bytes(b"")  # a put in flight
    fast = runner(store, signer, tmp_path, "fast")
    assert fast.open_jobs() == []
    assert list(store.list(layout.done_prefix("fast"))) == []  # not marked done
    publish(store, signer, "c-inflight", "fast", 1)
    assert [campaign for campaign, _, _ in fast.open_jobs()] == ["c-inflight"]
