"""The landing page's answer: which campaign it compares and the sentence per profile."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.report.headline import landing, landing_scope, profile_ratios, sentences
from tests.aggregator import lakegen

READ, WRITE = ("job1", "read"), ("job1", "write")


def test_newest_campaign_with_two_backends_and_its_sentence(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    fast = {READ: {"iops": 1000.0, "clat_p99_ns": 100_000}}
    slow = {READ: {"iops": 150.0, "clat_p99_ns": 2_500_000}}
    lakegen.write_campaign(store, "old", {"disk": slow, "tmpfs": fast}, 3, jitter=0.02)
    later = lakegen.T0 + timedelta(days=1)
    lakegen.write_campaign(
        store, "pair", {"disk": slow, "tmpfs": fast}, 3, jitter=0.02, start=later
    )
    newest = lakegen.T0 + timedelta(days=2)  # one backend only: nothing to compare there
    lakegen.write_campaign(store, "solo", {"tmpfs": fast}, 3, start=newest)
    with connect(str(tmp_path / "lake")) as lake:
        scope = landing_scope(lake)
        assert (scope.campaign, scope.backends) == ("pair", ("disk", "tmpfs"))
        _, result = landing(lake)
    (line,) = sentences(result)["random-reads"]
    # 1000/150 = 6.67 (±2 % jitter, same on both sides); p99 2.5 ms → 0.1 ms: 96 % lower
    assert line.startswith("tmpfs 6.7× disk IOPS [6")
    assert "; p99 latency 96 % lower [0.0" in line


def test_without_such_a_campaign_the_two_most_run_backends(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    metrics = {READ: {"iops": 500.0}, WRITE: {"iops": 250.0}}
    for i, (backend, reps) in enumerate((("nfs", 2), ("ceph", 4), ("nvme", 3))):
        start = lakegen.T0 + timedelta(hours=i)
        lakegen.write_campaign(store, f"c-{backend}", {backend: metrics}, reps, start=start)
    with connect(str(tmp_path / "lake")) as lake:
        scope = landing_scope(lake)
        assert (scope.campaign, scope.backends) == (None, ("ceph", "nvme"))
        _, result = landing(lake)
    (iops,) = [r for r in profile_ratios(result) if r.metric == "iops"]
    assert (iops.cases, iops.backend) == (2, "nvme")
    assert iops.ratio == pytest.approx(1.0) and iops.verdict == "equivalent"
    assert iops.low == pytest.approx(1.0) == iops.high  # two cases, both 1×
    assert sentences(result)["random-reads"][0].startswith("nvme 1× ceph IOPS (1×–1× over 2")
