"""Gang slots on the local directory lake (the whole protocol on MinIO: tests/runner/test_gang)."""

from __future__ import annotations

from pathlib import Path

from fiolake import gangs, layout
from fiolake.lease import release_lease
from fiolake.store import LocalStore

JOB = "c-1-p-b-r1-g3"


def test_slots_are_held_slots_by_number_each_runner_holding_one(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "lake")
    claimed = [gangs.claim_slot(store, JOB, 1, 3, f"m{i}", ttl_s=30) for i in range(3)]
    assert [c[0] for c in claimed if c is not None] == [0, 1, 2]
    assert gangs.claim_slot(store, JOB, 1, 3, "m3", ttl_s=30) is None  # the gang is full
    held = gangs.slots(store, JOB, 1, 3)
    assert {s: h.lease.runner for s, h in held.items()} == {0: "m0", 1: "m1", 2: "m2"}
    assert all(h.info.key == layout.gang_slot_key(JOB, 1, s) for s, h in held.items())
    assert gangs.dead_slots(held) == []

    second = claimed[1]
    assert second is not None
    release_lease(store, second[1])
    assert gangs.dead_slots(gangs.slots(store, JOB, 1, 3)) == [1]
    state = gangs.gang_state(store, JOB, 3)
    assert state is not None and (state.held, state.runners) == (2, ("m0", "m2"))


def test_a_runner_never_holds_two_slots(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "lake")
    assert gangs.claim_slot(store, JOB, 1, 3, "m0", ttl_s=30) is not None
    assert gangs.claim_slot(store, JOB, 1, 3, "m0", ttl_s=30) is None
    assert list(gangs.slots(store, JOB, 1, 3)) == [0]
