"""The checker proves itself: a clean history passes; seeded bad ones fail it.

The clean history and lake come from a real runner (real fio, null engine) on a local
lake, recorded by `fiolake.runner.distributed.history`; the bad ones are that history with one
event added or the lake with one thing left behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fiolake import layout
from fiolake.aggregator.lake.lake import connect
from fiolake.runner.distributed.config import RunnerConfig
from fiolake.runner.distributed.history import History, HistoryStore
from fiolake.runner.distributed.service import Runner
from fiolake.store import LocalStore
from tests.faults.checker import Report, check_history, check_lake_against, read_history
from tests.signed_jobs import publish_signed

JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"
CAMPAIGN = "c-selftest"


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict], list[str]]:
    """A lake with three committed jobs, their history and the published job ids."""
    root = tmp_path_factory.mktemp("clean")
    store = LocalStore(root / "lake")
    manifests, keyring = publish_signed(store, root / "key", CAMPAIGN, job=JOB, repeat=3)
    (root / "t").mkdir()
    recorded = HistoryStore(store, History(root / "r1.jsonl", "r1"))
    config = RunnerConfig(
        backend="b", target_dir=root / "t", runner_id="r1", spool_dir=root / "s", once=True
    )
    assert Runner(recorded, keyring, config, bucket="").serve().ok == 3
    published = [layout.parse_job_key(m.key)[1] for m in manifests]
    return root, read_history([root / "r1.jsonl"]), published


def _check(root: Path, events: list[dict], published: list[str]) -> Report:
    with connect(str(root / "lake")) as lake:
        return check_lake_against(
            events,
            published,
            LocalStore(root / "lake"),
            lake,
            spools=[root / "s"],
            campaigns=[CAMPAIGN],
        )


def _commit_event(events: list[dict], **changes: object) -> dict:
    ok = next(
        e
        for e in events
        if e["f"] == "put" and e["type"] == "ok" and e["key"].startswith("commits/")
    )
    return {**ok, **changes}


def test_a_clean_history_passes(clean: tuple[Path, list[dict], list[str]]) -> None:
    root, events, published = clean
    report = _check(root, events, published)
    assert report.problems == []
    assert report.stats["committed jobs"] == 3


def test_a_double_commit_fails_it(clean: tuple[Path, list[dict], list[str]]) -> None:
    _, events, _ = clean
    second = _commit_event(events, process="r2", run_id="r-20990101T000000-0000000000")
    problems = check_history([*events, {**second, "t": events[-1]["t"] + 1}]).problems
    assert any(p.startswith("double commit: job ") for p in problems), problems


def test_a_lost_job_fails_it(clean: tuple[Path, list[dict], list[str]]) -> None:
    root, events, published = clean
    report = _check(root, events, [*published, "c-selftest-n-b-r9"])
    assert report.problems == ["lost job: c-selftest-n-b-r9 was published but never committed"]


def test_a_zombie_commit_fails_it(clean: tuple[Path, list[dict], list[str]]) -> None:
    _, events, _ = clean
    commit = next(e for e in events if e["type"] == "invoke" and e["key"].startswith("commits/"))
    job = commit["key"][len("commits/") : -len(".json")]
    takeover = {
        "t": commit["t"] - 1,
        "process": "r2",
        "type": "ok",
        "f": "put",
        "key": layout.claim_key(job),
        "cond": "cas",
        "epoch": 2,
        "seq": 0,
    }
    problems = check_history(sorted([*events, takeover], key=lambda e: e["t"])).problems
    assert len(problems) == 1 and problems[0].startswith("zombie commit: r1 (epoch 1)"), problems


def test_a_run_left_in_a_spool_fails_it(
    clean: tuple[Path, list[dict], list[str]], tmp_path: Path
) -> None:
    root, events, published = clean
    left = root / "s" / "r-20990101T000000-0000000001"
    left.mkdir(parents=True)
    (left / "meta.json").write_text(json.dumps({"job_id": "x"}))
    try:
        problems = _check(root, events, published).problems
    finally:
        (left / "meta.json").unlink()
        left.rmdir()
    assert len(problems) == 1 and "still holds ['r-20990101T000000-0000000001']" in problems[0]


def test_a_missing_upload_fails_it(clean: tuple[Path, list[dict], list[str]]) -> None:
    root, events, published = clean
    upload = next(e for e in events if e["type"] == "ok" and e["key"].startswith("raw/"))
    ghost = {**upload, "key": layout.raw_key(upload["run_id"], "ghost.txt")}
    problems = _check(root, [*events, ghost], published).problems
    assert problems == [f"committed run {upload['run_id']} lacks ['{ghost['key']}']"]


def _ambiguous_claim(events: list[dict], read_back: dict) -> list[dict]:
    """The history with r1's first claim answered 412 (a retried PUT whose first answer was
    dropped) and followed by a read-back of the lease that returns `read_back`'s fields."""
    claim = next(
        e
        for e in events
        if (e["f"], e["type"], e.get("cond")) == ("put", "ok", "create")
        and e["key"].startswith("claims/")
    )
    refused = {**claim, "type": "fail", "error": "PreconditionFailed"}
    refused.pop("etag", None)
    got = {"t": claim["t"] + 1, "process": "r1", "pid": claim["pid"], "type": "ok", "f": "get"}
    got.update(key=claim["key"], etag="e-read-back", **read_back)
    rest = [e for e in events if e is not claim]
    return sorted([*rest, refused, got], key=lambda e: e["t"])


def test_an_ambiguous_claim_settled_by_reading_back_its_own_nonce_passes(
    clean: tuple[Path, list[dict], list[str]],
) -> None:
    _, events, _ = clean
    claim = next(e for e in events if e.get("cond") == "create" and e["type"] == "ok")
    own = {k: claim[k] for k in ("runner", "epoch", "seq", "nonce", "state")}
    report = check_history(_ambiguous_claim(events, own))
    assert report.problems == []
    assert report.stats["commits acknowledged"] == 3


def test_an_ambiguous_claim_that_reads_back_another_runners_nonce_is_a_zombie(
    clean: tuple[Path, list[dict], list[str]],
) -> None:
    _, events, _ = clean
    claim = next(e for e in events if e.get("cond") == "create" and e["type"] == "ok")
    job = claim["key"][len("claims/") : -len(".json")]
    theirs = {"runner": "r2", "epoch": 1, "seq": 0, "nonce": "0123456789abcdef"}
    history = _ambiguous_claim(events, {**theirs, "state": "running"})
    # r2 holds the lease from then on: r1's later lease writes and reads are not its own.
    history = [e for e in history if e.get("key") != claim["key"] or e["t"] <= claim["t"] + 1]
    problems = check_history(history).problems
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"zombie commit: r1 invoked the commit of {job} (run r-")
    assert problems[0].endswith(
        "without ever holding its lease (its last read of the lease named r2)"
    )
