"""`runsets.summarise` answers a question once per connection: again, with fewer metrics,
or (grouped by campaign) with fewer of the same campaigns, from what it kept; the gate
asks DuckDB one summary for every backend where it asked two per backend."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fiolake.aggregator.lake.lake import Lake, connect
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import fetch_rows
from fiolake.aggregator.stats import groupstats, runsets
from fiolake.aggregator.stats.gate import gate
from tests.aggregator import lakegen
from tests.aggregator.same import assert_same

METRICS = ["iops", "lat_mean_ns"]
NIGHTS = ("n1", "n2", "n3")


def lake_of_nights(tmp_path: Path) -> str:
    store = lakegen.local_store(tmp_path)
    for i, night in enumerate(NIGHTS):
        values = {("j", "read"): {"iops": 1000.0 + 10 * i, "lat_mean_ns": 5e4 - i}}
        lakegen.write_campaign(store, night, {"nvme": values, "sata": values}, 5,
                               start=lakegen.T0 + timedelta(days=i), jitter=0.04)  # fmt: skip
    return str(tmp_path)


def fresh(root: str, group: str, filt: RunFilter, metrics: list[str]) -> groupstats.Data:
    with connect(root) as lake:
        return runsets.summarise(lake, group, filt, metrics)


def test_a_question_answered_before_or_part_of_one_is_not_asked_again(tmp_path: Path) -> None:
    root = lake_of_nights(tmp_path)
    every = RunFilter(campaigns=NIGHTS, backends=("nvme",))
    two = RunFilter(campaigns=("n3", "n1"), backends=("nvme",))
    group = runsets.BY_CAMPAIGN
    with connect(root) as lake:
        asked = lakegen.counted_cursors(lake)
        first = runsets.summarise(lake, group, every, METRICS)
        assert runsets.summarise(lake, group, every, METRICS) == first
        assert runsets.summarise(lake, group, every, ["iops"]) == fresh(
            root, group, every, ["iops"]
        )
        assert runsets.summarise(lake, group, two, METRICS) == fresh(root, group, two, METRICS)
        assert {g for g, _ in runsets.summarise(lake, group, two, METRICS)} == {"n1", "n3"}
        assert len(asked) == 1
        # Not part of what was kept: another backend, another metric, another grouping.
        runsets.summarise(lake, group, RunFilter(campaigns=NIGHTS, backends=("sata",)), METRICS)
        runsets.summarise(lake, group, every, [*METRICS, "bw_bytes"])
        by_backend = runsets.summarise(lake, "CAST(r.backend AS VARCHAR)", two, METRICS)
        assert by_backend == fresh(root, "CAST(r.backend AS VARCHAR)", two, METRICS)
        assert len(asked) == 4


def test_the_gate_asks_one_summary_for_every_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = lake_of_nights(tmp_path)
    with monkeypatch.context() as nothing_kept:
        nothing_kept.setattr(runsets, "KEPT_SUMMARIES", 0)
        with connect(root) as lake:
            want = gate(lake, "n3")
    queries: list[str] = []

    def counting(lake: Lake, sql: str) -> list[tuple[Any, ...]]:
        queries.append(sql)
        return fetch_rows(lake, sql)

    monkeypatch.setattr(runsets, "fetch_rows", counting)
    for baseline in (None, "n2"):  # by default its night model reads every earlier night
        queries.clear()
        with connect(root) as lake:
            got = gate(lake, "n3", baseline)
        if baseline is None:
            assert_same(
                [(g.backend, g.row) for g in got.rows], [(g.backend, g.row) for g in want.rows]
            )
        assert len(got.rows) == 2 * 4  # two backends, the 4 default metrics
        # One for both backends (four before). The new campaign (and a named baseline) is
        # summarised while the baseline is found; the default's earlier nights (this lake
        # has no night summaries) are then asked alone.
        assert len(queries) == (2 if baseline is None else 1), baseline
        assert "'n3'" in queries[0] and all("'n3'" not in q for q in queries[1:]), baseline


def test_one_backend_is_taken_from_a_summary_by_backend_and_campaign(tmp_path: Path) -> None:
    root = lake_of_nights(tmp_path)
    both = RunFilter(backends=("nvme", "sata"), campaigns=NIGHTS)
    one = RunFilter(backends=("sata",), campaigns=("n2", "n1"))
    with connect(root) as lake:
        asked = lakegen.counted_cursors(lake)
        runsets.summarise(lake, runsets.BY_BACKEND_CAMPAIGN, both, METRICS)
        taken = runsets.summarise(lake, runsets.BY_CAMPAIGN, one, ["iops"])
        assert len(asked) == 1
        # A filter that differs in more than backend and campaigns is asked of DuckDB.
        runsets.summarise(lake, runsets.BY_CAMPAIGN, RunFilter(backends=("sata",)), ["iops"])
        assert len(asked) == 2
    assert taken == fresh(root, runsets.BY_CAMPAIGN, one, ["iops"])
    assert {group for group, _ in taken} == {"n1", "n2"}


def test_campaigns_kept_are_taken_and_only_the_others_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = lake_of_nights(tmp_path)
    group = runsets.BY_BACKEND_CAMPAIGN
    asked_for = RunFilter(backends=("sata",), campaigns=("n1", "n3"))
    want = fresh(root, group, asked_for, ["iops"])
    one = RunFilter(backends=("sata",), campaigns=("n3", "n1"))
    want_one = fresh(root, runsets.BY_CAMPAIGN, one, ["iops"])
    queries: list[str] = []

    def counting(lake: Lake, sql: str) -> list[tuple[Any, ...]]:
        queries.append(sql)
        return fetch_rows(lake, sql)

    monkeypatch.setattr(runsets, "fetch_rows", counting)
    with connect(root) as lake:
        runsets.summarise(lake, group, RunFilter(campaigns=("n3",)), METRICS)  # every backend
        got = runsets.summarise(lake, group, asked_for, ["iops"])
        assert len(queries) == 2
        assert "'n3'" not in queries[1] and "'n1'" in queries[1]  # n1 alone
        # Kept whole: its one backend's part is asked of no one again.
        assert_same(runsets.summarise(lake, runsets.BY_CAMPAIGN, one, ["iops"]), want_one)
        assert len(queries) == 2
        # Another filter (a profile) is no part of what was kept: asked whole.
        other = RunFilter(backends=("sata",), campaigns=("n1", "n3"), profile="random-reads")
        runsets.summarise(lake, group, other, ["iops"])
        assert len(queries) == 3 and "'n3'" in queries[2]
    assert {g for g, _ in got} == {"sata\x1fn1", "sata\x1fn3"}
    assert_same(got, want)


def test_threads_sharing_a_connection_get_their_own_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The app's sessions share one connection: kept answers come and go under the others.
    root = lake_of_nights(tmp_path)
    questions = [
        (runsets.BY_CAMPAIGN, RunFilter(campaigns=nights, backends=(backend,)))
        for backend in ("nvme", "sata")
        for nights in (NIGHTS, NIGHTS[:2], NIGHTS[1:])
    ] * 3
    monkeypatch.setattr(runsets, "KEPT_SUMMARIES", 0)
    with connect(root) as lake:
        want = {q: runsets.summarise(lake, *q, METRICS) for q in dict.fromkeys(questions)}
    monkeypatch.setattr(runsets, "KEPT_SUMMARIES", 2)
    with connect(root) as lake, ThreadPoolExecutor(6) as pool:
        got = list(pool.map(lambda q: runsets.summarise(lake, *q, METRICS), questions))
    assert got == [want[q] for q in questions]
