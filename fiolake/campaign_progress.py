"""Where a campaign stands: every job's state from its commit marker, lease and the notes
runners left (`campaign_status`), a summary, and waiting until every job is committed
(`publish --wait`, `fiolake status`)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime

from fiolake import gangs, layout
from fiolake.commits import Commit
from fiolake.errors import FiolakeError, NotFound, StoreUnavailable
from fiolake.lease import is_expired, lease_age_s, read_lease
from fiolake.manifest import manifest_in_envelope
from fiolake.store import ObjectStore
from fiolake.units import human_duration


def campaign_job_keys(store: ObjectStore, campaign_id: str) -> list[str]:
    """Every manifest key of a campaign, in both key layouts, sorted."""
    keys = list(store.list(layout.campaign_prefix(campaign_id)))
    for backend in store.list_children(layout.BY_BACKEND_PREFIX):
        try:
            keys += store.list(layout.backend_campaign_prefix(backend, campaign_id))
        except ValueError:
            continue  # not a backend name this layout would have written
    return sorted(keys)


@dataclass(frozen=True)
class JobStatus:
    """Where one job of a campaign stands."""

    job_id: str
    state: str  # pending | running | stale-lease | ok | failed | rejected | interrupted
    runner: str | None
    run_id: str | None
    lease_age_s: float | None
    epoch: int | None
    reason: str | None = None  # why it failed / was rejected, or why runners left it waiting
    key: str = ""  # the manifest's object key
    reason_age_s: float | None = None  # age of the newest waiting note (the store's clock)


def _waiting_reasons(
    store: ObjectStore, job_id: str, since: datetime | None = None
) -> tuple[str | None, float | None]:
    """The notes runners left on a job they could not judge, as one line, and the age of
    the newest in seconds (None, None if none). Notes written before `since` (the job's
    last claim) are ignored: they explain a wait that claim ended. Times are the store's
    (Last-Modified against its Date), not the runners' clocks, which may be skewed."""
    notes, ages = [], []
    for key in store.list(layout.waiting_prefix(job_id)):
        try:
            data, info = store.get(key)
            note = json.loads(data)
            text = f"{note['runner']}: {note['reason']}"
        except (NotFound, ValueError, KeyError, TypeError):
            continue  # gone or not ours to explain
        if since is not None and info.last_modified < since:
            continue
        notes.append(text)
        ages.append(max(0.0, (info.server_time - info.last_modified).total_seconds()))
    return "; ".join(sorted(notes)) or None, min(ages, default=None)


def campaign_status(store: ObjectStore, campaign_id: str) -> list[JobStatus]:
    """The state of every job of a campaign (commit marker first, then its lease, then
    the notes of runners that left it waiting)."""
    keys = campaign_job_keys(store, campaign_id)
    if not keys:
        raise FiolakeError(
            f"no jobs found for campaign {campaign_id!r} in {store.url}: check the id "
            "printed by `fiolake publish` and the lake (FIOLAKE_LAKE)"
        )
    out = []
    for key in keys:
        _, job_id = layout.parse_job_key(key)
        try:
            commit = Commit.from_bytes(store.get(layout.commit_key(job_id))[0])
            out.append(
                JobStatus(
                    job_id,
                    commit.status,
                    commit.runner,
                    commit.run_id,
                    None,
                    None,
                    commit.reason or None,
                    key,
                )
            )
            continue
        except NotFound:
            pass
        gang = _gang_status(store, job_id, key)
        if gang is not None:
            out.append(gang)
            continue
        current = read_lease(store, job_id)
        if current is None:
            reason, age = _waiting_reasons(store, job_id)
            out.append(JobStatus(job_id, "pending", None, None, None, None, reason, key, age))
            continue
        lease, info = current
        state = "stale-lease" if is_expired(lease, info) else "running"
        # A job handed back or abandoned may wait again: notes since its last claim say why.
        reason, age = (
            _waiting_reasons(store, job_id, info.last_modified)
            if state == "stale-lease"
            else (None, None)
        )
        out.append(
            JobStatus(
                job_id, state, lease.runner, None, lease_age_s(info), lease.epoch, reason, key, age
            )
        )
    return out


def _gang_status(store: ObjectStore, job_id: str, key: str) -> JobStatus | None:
    """Where an uncommitted gang job stands ("waiting for 2 of 4 runners" / running),
    or None when it is no gang job or no runner joined it yet."""
    if not any(True for _ in store.list_children(layout.gang_prefix(job_id))):
        return None
    size = manifest_in_envelope(store.get(key)[0]).gang or 1
    state = gangs.gang_state(store, job_id, size)
    if state is None:  # its last runner left between the two listings
        return None
    runners = ",".join(state.runners) or None
    if state.started:
        return JobStatus(job_id, "running", runners, None, None, state.attempt, None, key)
    why = f"waiting for runners: {state.held} of {size} joined (attempt {state.attempt})"
    return JobStatus(job_id, "pending", runners, None, None, state.attempt, why, key)


# Every state `campaign_status` reports, in the order a campaign's summary shows them.
JOB_STATES = ("pending", "running", "stale-lease", "ok", "failed", "rejected", "interrupted")


def list_campaigns(store: ObjectStore) -> list[str]:
    """Every campaign id in the lake (both key layouts), greatest first: ids from
    `new_campaign_id` sort by time, so that is newest first. Costs one LIST per backend."""
    ids: set[str] = set()
    for backend in store.list_children(layout.BY_BACKEND_PREFIX):
        try:
            ids.update(store.list_children(layout.backend_prefix(backend)))
        except ValueError:
            continue  # not a backend name this layout would have written
    for child in store.list_children(layout.JOBS_PREFIX):
        if f"{layout.JOBS_PREFIX}{child}/" != layout.BY_BACKEND_PREFIX:
            ids.add(child)
    return sorted((i for i in ids if _is_id(i)), reverse=True)


def _is_id(value: str) -> bool:
    try:
        layout.check_id("campaign id", value)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class CampaignSummary:
    """A campaign in one line: jobs per state and the reasons, most frequent first."""

    campaign_id: str
    counts: dict[str, int]  # state -> jobs (every JOB_STATES key)
    reasons: list[tuple[int, str, str]]  # (jobs, state, reason), most frequent first

    @property
    def jobs(self) -> int:
        return sum(self.counts.values())

    @property
    def counts_text(self) -> str:
        """`3 ok, 1 rejected`: the states that have jobs, in JOB_STATES order."""
        return ", ".join(f"{n} {s}" for s, n in self.counts.items() if n)

    @property
    def top_reason(self) -> str | None:
        """`<n> <state>: <reason>` of the most frequent reason, if any."""
        if not self.reasons:
            return None
        n, state, reason = self.reasons[0]
        return f"{n} {state}: {reason}"


def summarize(campaign_id: str, jobs: Sequence[JobStatus]) -> CampaignSummary:
    """Counts per state and the distinct reasons of `jobs` (one campaign's status)."""
    counts = {state: 0 for state in JOB_STATES}
    reasons: dict[tuple[str, str], int] = {}
    for job in jobs:
        counts[job.state] = counts.get(job.state, 0) + 1
        if job.reason:
            reasons[job.state, job.reason] = reasons.get((job.state, job.reason), 0) + 1
    ranked = sorted(((n, st, r) for (st, r), n in reasons.items()), key=lambda x: -x[0])
    return CampaignSummary(campaign_id, counts, ranked)


# The states of a committed job: its commit marker exists and never changes again.
ENDED = ("ok", "failed", "rejected", "interrupted")


class CampaignTimeout(FiolakeError):
    """A campaign still had jobs without a commit when the wait ran out (exit 1)."""

    def __init__(self, summary: CampaignSummary, timeout_s: float):
        self.summary = summary
        c = summary.counts
        # Every unfinished state is named; pending and running always, even at zero.
        left = [f"{c['pending']} pending", f"{c['running']} running"]
        left += [f"{n} {s}" for s, n in c.items() if s not in ENDED and s not in
                 ("pending", "running") and n]  # fmt: skip
        super().__init__(
            f"campaign {summary.campaign_id} not finished after {human_duration(timeout_s)}: "
            f"{', '.join(left)} — check that a runner serves each of its backends "
            f"(`fiolake status --campaign {summary.campaign_id}` says why jobs wait), or "
            "raise --timeout"
        )


def wait_for_campaign(
    store: ObjectStore,
    campaign_id: str,
    *,
    timeout_s: float,
    poll_s: float = 5.0,
    on_progress: Callable[[CampaignSummary], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    around_poll: Callable[[float], AbstractContextManager[object]] = contextlib.nullcontext,
) -> CampaignSummary:
    """Poll `campaign_status` until every job of the campaign is committed and return its
    summary (the caller judges ok/failed). `on_progress` gets each poll's summary.

    Each poll runs inside `around_poll(seconds left)` (the CLI waits there for the host's
    benchmark to end, at most until the deadline: runner.host.lock.between_solo_runs).
    CampaignTimeout when jobs are still uncommitted after `timeout_s`. A store that is
    briefly unreachable does not end the wait: polling goes on until the deadline, and
    only then is its error raised.
    """
    deadline = clock() + timeout_s
    while True:
        try:
            with around_poll(max(0.0, deadline - clock())):
                summary = summarize(campaign_id, campaign_status(store, campaign_id))
        except StoreUnavailable:
            if clock() >= deadline:
                raise
        else:
            if on_progress is not None:
                on_progress(summary)
            if all(summary.counts[s] == 0 for s in JOB_STATES if s not in ENDED):
                return summary
            if clock() >= deadline:
                raise CampaignTimeout(summary, timeout_s)
        sleep(max(0.0, min(poll_s, deadline - clock())))
