"""The one attempt pipeline (runner.attempt): its durability rules keep an attempt until it
is committed, and its check names the file of every refusal."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from fiolake import layout
from fiolake.errors import PolicyError, StoreUnavailable
from fiolake.runner import attempt
from fiolake.runner import execute as ex
from fiolake.runner.policy.check import Caps
from fiolake.runner.spool import Spool
from fiolake.s3client import S3Settings
from fiolake.store import LocalStore, S3Store

GOOD = "[w]\nrw=write\nbs=4k\nsize=64k\nioengine=null\n"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends


def _refused(request: ex.RunRequest) -> attempt.Attempt:
    return attempt.refused(request, "job file refused: test")


def test_a_spooled_attempt_survives_an_outage_and_commits_later(tmp_path: Path) -> None:
    """An object store nobody answers (a closed port: a real refused connection) fails the
    upload; the attempt stays in the spool, and the next pass commits it."""
    request = ex.RunRequest(GOOD, "w", "b", tmp_path, "j-1", "c-1", runner="r1")
    done = _refused(request)
    spool = Spool(tmp_path / "spool")
    durability = attempt.Spooled(0.3, spool=spool)
    where = S3Settings(f"https://127.0.0.1:{_closed_port()}", access_key="k", secret_key="s")
    down = S3Store("lake", "", where)
    with pytest.raises(StoreUnavailable):
        attempt.record(down, done, durability, runner="r1")
    [entry] = spool.pending()
    assert entry.run_id == done.outcome.run_id and entry.meta["status"] == "rejected"
    store = LocalStore(tmp_path / "lake")
    won = attempt.commit_spooled(store, entry, durability)
    assert won is not None and won.run_id == done.outcome.run_id
    marker = json.loads(store.get(layout.commit_key("j-1"))[0])
    assert (marker["status"], marker["reason"]) == ("rejected", "job file refused: test")
    assert spool.pending() == []


def test_a_lost_job_is_not_committed_and_leaves_no_spool(tmp_path: Path) -> None:
    request = ex.RunRequest(GOOD, "w", "b", tmp_path, "j-2", "c-1", runner="r1")
    spool = Spool(tmp_path / "spool")
    store = LocalStore(tmp_path / "lake")
    won = attempt.record(
        store,
        _refused(request),
        attempt.Spooled(5.0, spool=spool),
        runner="r1",
        still_ours=lambda: False,
    )
    assert won == attempt.LOST
    assert store.head(layout.commit_key("j-2")) is None and spool.pending() == []


def test_check_names_the_file_of_every_refusal() -> None:
    bad_fill = attempt.NamedJobFile("fill", "[f]\nrw=write\nexec_prerun=true\n")
    source = attempt.NamedJobFile("m", GOOD, bad_fill)
    with pytest.raises(PolicyError) as refused:
        attempt.check(source, caps=Caps())
    assert refused.value.violations == [
        "fill (precondition of m): [f] exec_prerun: runs a shell command; not allowed"
    ]
    with pytest.raises(PolicyError) as refused:
        attempt.check(attempt.NamedJobFile("m", "[m]\nrw=write\nsize=1M\n"), caps=Caps(1024))
    assert [v.split(":")[0] for v in refused.value.violations] == ["m"]


def test_a_gangs_commit_is_slot_zeros_run_whoever_writes_it(tmp_path: Path) -> None:
    request = ex.RunRequest(GOOD, "w", "b", tmp_path, "j-3", "c-1", runner="r2")
    done = _refused(request)
    slots = ("r-slot0", "r-slot1", done.outcome.run_id)
    commit = done.commit("r2", status="ok", reason="", run_ids=slots)
    assert (commit.run_id, commit.members, commit.status) == ("r-slot0", slots, "ok")
    solo = done.commit("r2")
    assert (solo.run_id, solo.members) == (done.outcome.run_id, ())


def test_a_spooled_attempt_whose_job_was_taken_over_during_its_upload_is_not_committed(
    tmp_path: Path,
) -> None:
    """Seen in the fault history on versitygw: a runner resumed its spooled attempt, one
    upload took 6.3 s, longer than its lease, another runner took the job over, and the
    resumed attempt committed anyway. The lease is read again after the upload."""
    request = ex.RunRequest(GOOD, "w", "b", tmp_path, "j-3", "c-1", runner="r1")
    done = _refused(request)
    spool = Spool(tmp_path / "spool")
    durability = attempt.Spooled(0.3, spool=spool)
    entry = attempt.keep(done, done.commit("r1"), durability)
    assert entry is not None
    store = LocalStore(tmp_path / "lake")
    asked: list[int] = []

    def taken_over() -> bool:
        asked.append(len(list(store.list(layout.RESULTS_PREFIX))))  # after the upload
        return False

    won = attempt.commit_spooled(store, entry, durability, still_ours=taken_over)
    assert won == attempt.LOST and asked and asked[0] > 0
    assert store.head(layout.commit_key("j-3")) is None and spool.pending() == []
