"""The app's cached answers last as long as the lake's state, not a fixed time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from fiolake.aggregator.compact import compact
from fiolake.aggregator.lake import Lake, connect
from fiolake.app import common
from tests.aggregator import lakegen

READ = ("job1", "read")
calls: list[str] = []


def count_runs(lake: Lake) -> int:
    calls.append(lake.url)
    return lake.con.sql("SELECT count(*) FROM runs").fetchone()[0]


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    common._cached_call.clear()
    calls.clear()
    yield
    common._cached_call.clear()


def test_an_answer_outlives_the_lake_reopened_with_nothing_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_campaign(store, "night-1", {"nvme": {READ: {"iops": 1000}}}, 2)
    compact(store, grace=timedelta(0))
    with connect(str(tmp_path)) as lake:
        assert common.run_or_stop(count_runs, lake) == 2
    # The app reopens the lake every minute: a new Lake object of the same state.
    with connect(str(tmp_path)) as lake:
        assert common.run_or_stop(count_runs, lake) == 2
    assert len(calls) == 1
    lakegen.write_campaign(store, "night-2", {"nvme": {READ: {"iops": 900}}}, 1)
    with connect(str(tmp_path)) as lake:
        assert common.run_or_stop(count_runs, lake) == 3  # a new commit: asked again
    assert len(calls) == 2


def test_cached_answers_have_no_time_limit() -> None:
    # st.cache_data with ttl set expires entries after it: a lake reopened every minute
    # recomputed every page's queries. The state in the key is what invalidates.
    assert common._cached_call._info.ttl is None  # type: ignore[attr-defined]
