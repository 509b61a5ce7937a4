"""`wait_for_campaign` (behind `publish --wait`): polls `campaign_status` until every job
is committed, reports each poll, and times out naming what is left and how to fix it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake import layout
from fiolake.campaign_progress import CampaignTimeout, campaign_job_keys, wait_for_campaign
from fiolake.campaigns import plan_campaign, publish_manifests
from fiolake.cli import cli
from fiolake.commits import Commit
from fiolake.errors import StoreUnavailable
from fiolake.signing import LocalSigner
from fiolake.store import LocalStore
from fiolake.units import human_duration

JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"


class Clock:
    """A fake monotonic clock that `sleep` advances, running `on_sleep` hooks in order."""

    def __init__(self, *on_sleep: object) -> None:
        self.now = 0.0
        self.hooks = list(on_sleep)
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.hooks:
            self.hooks.pop(0)()  # type: ignore[operator]


def campaign(tmp_path: Path, jobs: int = 2) -> tuple[LocalStore, list[str]]:
    store = LocalStore(tmp_path / "lake")
    manifests = plan_campaign(
        [("n", JOB)], ["b"], campaign_id="c-1", repeat=jobs, runtime_s=None,
        size_bytes=None, bucket="", expires_in=timedelta(hours=1),
    )  # fmt: skip
    publish_manifests(store, manifests, LocalSigner.generate(tmp_path / "k"))
    return store, [layout.parse_job_key(k)[1] for k in campaign_job_keys(store, "c-1")]


def commit(store: LocalStore, job_id: str, status: str) -> None:
    marker = Commit(job_id, f"run-{job_id}", "c-1", "r1", status, "2026-01-01T00:00:00+00:00")
    store.put(layout.commit_key(job_id), marker.to_bytes(), if_none_match=True)


def test_returns_when_the_last_job_commits_reporting_every_poll(tmp_path: Path) -> None:
    store, jobs = campaign(tmp_path)
    clock = Clock(lambda: commit(store, jobs[0], "ok"), lambda: commit(store, jobs[1], "rejected"))
    seen: list[str] = []
    summary = wait_for_campaign(
        store, "c-1", timeout_s=60, poll_s=5, on_progress=lambda s: seen.append(s.counts_text),
        clock=clock, sleep=clock.sleep,
    )  # fmt: skip
    assert seen == ["2 pending", "1 pending, 1 ok", "1 ok, 1 rejected"]
    assert summary.counts["ok"] == 1 and summary.counts["rejected"] == 1
    assert clock.sleeps == [5, 5]


def test_every_poll_runs_inside_around_poll(tmp_path: Path) -> None:
    """The CLI waits there for this host's fio run to end (between_solo_runs)."""
    store, jobs = campaign(tmp_path)
    clock = Clock(lambda: commit(store, jobs[0], "ok"), lambda: commit(store, jobs[1], "ok"))
    events: list[str] = []
    real_list = store.list

    def listing(prefix: str):  # noqa: ANN202
        events.append("list")
        return real_list(prefix)

    @contextlib.contextmanager
    def around(seconds_left: float) -> Iterator[None]:
        events.append(f"enter {seconds_left:g}")
        yield
        events.append("exit")

    store.list = listing  # type: ignore[method-assign]
    wait_for_campaign(store, "c-1", timeout_s=60, poll_s=5, clock=clock, sleep=clock.sleep,
                      around_poll=around)  # fmt: skip
    depth, listed_outside = 0, 0
    for event in events:
        depth += {"enter": 1, "exit": -1}.get(event.split()[0], 0)
        listed_outside += event == "list" and depth == 0
    entered = [e for e in events if e.startswith("enter")]
    assert entered == ["enter 60", "enter 55", "enter 50"]  # one per poll, with the time left
    assert events.count("exit") == 3
    assert "list" in events and listed_outside == 0


def test_times_out_naming_what_is_left_and_how_to_fix_it(tmp_path: Path) -> None:
    store, jobs = campaign(tmp_path, jobs=3)
    clock = Clock(lambda: commit(store, jobs[0], "ok"))
    with pytest.raises(CampaignTimeout) as err:
        wait_for_campaign(store, "c-1", timeout_s=12, poll_s=5, clock=clock, sleep=clock.sleep)
    assert str(err.value) == (
        "campaign c-1 not finished after 12s: 2 pending, 0 running — check that a runner "
        "serves each of its backends (`fiolake status --campaign c-1` says why jobs wait), "
        "or raise --timeout"
    )
    assert clock.sleeps == [5, 5, 2]  # the last sleep ends at the deadline, not after it


def test_a_store_outage_does_not_end_the_wait_before_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, jobs = campaign(tmp_path, jobs=1)
    real_list = store.list
    outage = {"left": 2}

    def flaky_list(prefix: str):  # noqa: ANN202
        if outage["left"]:
            outage["left"] -= 1
            raise StoreUnavailable("cannot reach the store")
        return real_list(prefix)

    monkeypatch.setattr(store, "list", flaky_list)
    clock = Clock(lambda: None, lambda: commit(store, jobs[0], "ok"))
    summary = wait_for_campaign(store, "c-1", timeout_s=60, poll_s=1, clock=clock,
                                sleep=clock.sleep)  # fmt: skip
    assert summary.counts["ok"] == 1
    outage["left"] = 99
    with pytest.raises(StoreUnavailable):  # still down at the deadline: its error, not a hang
        wait_for_campaign(store, "c-1", timeout_s=3, poll_s=1, clock=clock, sleep=clock.sleep)


@pytest.mark.parametrize(
    ("seconds", "text"), [(7200, "2h"), (5400, "90m"), (90, "90s"), (2.5, "2.5s"), (86400, "1d")]
)
def test_the_timeout_is_named_as_the_user_wrote_it(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_publish_wait_without_runners_times_out_with_the_exact_message(tmp_path: Path) -> None:
    LocalSigner.generate(tmp_path / "k")
    env = {"FIOLAKE_SIGNER": "local", "FIOLAKE_SIGNING_KEY": str(tmp_path / "k")}
    (tmp_path / "n.fio").write_text(JOB)
    args = ["publish", str(tmp_path / "n.fio"), "--backend", "b", "--repeat", "2",
            "--lake", str(tmp_path / "lake"), "--wait", "--timeout", "2s"]  # fmt: skip
    res = CliRunner().invoke(cli, args, env=env)
    assert res.exit_code == 1, res.output
    campaign_id = res.stdout.strip()
    assert re.fullmatch(r"c-\d{8}-\d{6}-[0-9a-f]{4}", campaign_id)  # the id, and only it
    assert res.stderr.splitlines() == [
        f"published 2 job(s) to {tmp_path / 'lake'}",
        f"campaign {campaign_id}: 2 pending",
        f"Error: campaign {campaign_id} not finished after 2s: 2 pending, 0 running — check "
        f"that a runner serves each of its backends (`fiolake status --campaign {campaign_id}` "
        "says why jobs wait), or raise --timeout",
    ]
