"""Covered ids left for later: nothing read until a table's ids are asked, then the object
once for every table."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from fiolake import layout
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.coveredids import covered_ids, covered_ids_later
from fiolake.store import LocalStore
from tests.aggregator import lakegen


class GetCountingStore(LocalStore):
    """A local store that records every key it is asked to read."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.got: list[str] = []

    def get(self, key: str):  # noqa: ANN201 - LocalStore.get's
        self.got.append(key)
        return super().get(key)


def test_the_ids_object_is_read_once_for_all_tables_and_only_when_asked(tmp_path: Path) -> None:
    store = GetCountingStore(tmp_path)
    lakegen.write_run(store, run_id="ok1", job_id="j1")
    lakegen.write_run(store, run_id="ok2", job_id="j2")
    compact(store, grace=timedelta(0))
    key = layout.generation_key(1)
    body = json.loads(store.get(key)[0])
    store.got.clear()
    later = covered_ids_later(store, key, body)
    assert store.got == []
    assert {t: len(ids) for t, ids in later.items()} == {d["table"]: 2 for d in body["delta"]}
    assert store.got == []  # counted from the record
    now = covered_ids(store, key, body)
    store.got.clear()
    for table, ids in later.items():
        assert ids.read().equals(now[table])
    assert store.got == [body["keys_file"]]
