"""One runner's part in a gang job: claim a slot, meet, start at the instant, commit once.

The protocol on the store is fiolake.gangs; this module is the member's side of it,
called from the runner loop (runner.distributed.service) for manifests with `gang` set.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Protocol

from fiolake import gangs, layout
from fiolake.commits import REASON_CHARS, Commit
from fiolake.errors import NotFound, PolicyError, StoreError
from fiolake.manifest import Manifest
from fiolake.runner import attempt
from fiolake.runner import execute as ex
from fiolake.runner.distributed.config import RunnerConfig, RunnerStats
from fiolake.runner.distributed.fleet import FleetStatus
from fiolake.runner.heartbeat import Heartbeat
from fiolake.runner.host.lock import HostLock
from fiolake.runner.policy.blocktarget import BlockTarget
from fiolake.store import ObjectStore
from fiolake.storeclock import ClockOffset, measure_offset


class Runner(Protocol):
    """What a gang member needs of the runner it runs in (runner.distributed.service.Runner)."""

    store: ObjectStore
    config: RunnerConfig
    stats: RunnerStats
    fleet: FleetStatus  # the status the Fleet page reads
    stop_requested: threading.Event

    def host_lock(self, *, shared: bool = False) -> HostLock | None:
        """A handle on the host lock for one job; None under --share-host."""


log = logging.getLogger("fiolake.runner")

# Seconds between the moment the start is fixed and the start itself: every member must
# see start.json (it polls every poll_s) and be ready before the instant.
START_LEAD_S = 3.0
# How often a waiting member looks at the slots (bounded by the runner's --poll).
WATCH_MAX_S = 0.5
DEFAULT_TIMEOUT_S = 600


class GangFailed(Exception):
    """This attempt failed as a whole (a member died, lost its slot, or never came)."""


class Member:
    """One slot of one attempt of a gang job, held by this runner."""

    def __init__(self, runner: Runner, manifest: Manifest, attempt: int, slot: int) -> None:
        self.runner = runner
        self.store = runner.store
        self.manifest = manifest
        self.size = manifest.gang or 1
        self.attempt = attempt
        self.slot = slot
        self.me = runner.config.runner_id
        self.poll_s = min(runner.config.poll_s, WATCH_MAX_S)
        self.failed = threading.Event()

    def fail(self, reason: str) -> None:
        """Fail the attempt for everyone (unless the job is committed already)."""
        if self.store.head(layout.commit_key(self.manifest.job_id)) is None:
            gangs.fail_attempt(self.store, self.manifest.job_id, self.attempt, self.me, reason)
        self.failed.set()

    def check(self, heartbeat: Heartbeat, *, done: set[int] | frozenset[int] = frozenset()) -> None:
        """Raise GangFailed when the attempt is over: our slot lost, the failed marker
        written, or a member (other than those in `done`) no longer renewing its slot."""
        job_id = self.manifest.job_id
        if heartbeat.lost.is_set():
            self.fail(f"slot {self.slot} was lost")
        why = gangs.failure(self.store, job_id, self.attempt)
        if why is not None:
            self.failed.set()
            raise GangFailed(why)
        held = gangs.slots(self.store, job_id, self.attempt, self.size)
        dead = [s for s in gangs.dead_slots(held) if s not in done]
        if dead:
            who = ", ".join(f"{held[s].lease.runner} (slot {s})" for s in dead)
            self.fail(f"member {who} stopped renewing its slot")
            raise GangFailed(gangs.failure(self.store, job_id, self.attempt) or "member lost")

    def wait_for_all(self, heartbeat: Heartbeat, clock: ClockOffset) -> gangs.GangStart:
        """Wait until all N slots are held, then fix (or read) the start instant."""
        job_id = self.manifest.job_id
        timeout_s = self.manifest.gang_timeout_s or DEFAULT_TIMEOUT_S
        joined = clock.store_now()
        while True:
            start = gangs.read_start(self.store, job_id, self.attempt)
            if start is not None:
                return start
            if self.store.head(layout.commit_key(job_id)) is not None:
                raise GangFailed("the job ended (committed) before the gang started")
            self.check(heartbeat)
            held = gangs.slots(self.store, job_id, self.attempt, self.size)
            if len(held) == self.size:
                runners = tuple(held[s].lease.runner for s in range(self.size))
                proposed = gangs.GangStart(clock.store_now() + START_LEAD_S, runners, self.me)
                return gangs.fix_start(self.store, job_id, self.attempt, proposed)
            if clock.store_now() - joined > timeout_s:
                raise TimeoutError(
                    f"only {len(held)} of {self.size} runners of backend "
                    f"{self.manifest.backend} showed up within {timeout_s} s"
                )
            if self.runner.stop_requested.wait(self.poll_s):
                self.fail(f"{self.me} was asked to stop before the gang started")
                raise GangFailed("stopped before the start")

    def watch(self, heartbeat: Heartbeat, until: threading.Event) -> threading.Thread:
        """A thread that sets `self.failed` as soon as the attempt fails while fio runs."""

        def run() -> None:
            while not until.wait(self.poll_s):
                try:
                    self.check(heartbeat)
                except GangFailed:
                    return
                except StoreError as exc:
                    log.warning("cannot watch gang %s: %s", self.manifest.job_id, exc)

        thread = threading.Thread(target=run, daemon=True, name=f"gang-{self.manifest.job_id}")
        thread.start()
        return thread


def _sleep_until(local_instant: float) -> None:
    """Sleep until `local_instant` (this host's clock) in shortening steps: no busy spin,
    which on a loaded host (or N members on one) would only compete for the CPU."""
    left = local_instant - time.time()
    if left < 0:
        log.warning("ready %.0f ms after the gang's start instant: starting late", -left * 1e3)
    else:
        log.info("ready %.0f ms before the gang's start instant", left * 1e3)
    while (left := local_instant - time.time()) > 0:
        time.sleep(left if left < 0.005 else left - 0.002)


def run_member(runner: Runner, manifest: Manifest, request: ex.RunRequest) -> str | None:
    """Take part in gang job `manifest`; the gang's status when this runner committed
    it, else None (not ours: gang full, attempt failed, or another member committed)."""
    store, cfg = runner.store, runner.config
    job_id = manifest.job_id
    attempt = gangs.current_attempt(store, job_id)
    claimed = gangs.claim_slot(store, job_id, attempt, manifest.gang or 1, cfg.runner_id, cfg.ttl_s)
    if claimed is None:
        return None
    slot, lease = claimed
    member = Member(runner, manifest, attempt, slot)
    log.info("joined gang %s as slot %d of %d (attempt %d)", job_id, slot, member.size, attempt)
    runner.fleet.job(job_id, cfg.ttl_s)  # the Fleet page shows the gang job as current
    heartbeat = Heartbeat(store, lease)
    heartbeat.start()
    try:
        return _take_part(runner, member, heartbeat, request)
    except GangFailed as exc:
        committed = _committed_status(store, job_id)
        if committed is not None:  # ended for good (e.g. the gang never filled)
            return _count(runner, committed)
        log.warning("gang %s attempt %d failed: %s", job_id, attempt, exc)
        runner.stats.lost += 1
        return None
    finally:
        heartbeat.stop()


def _take_part(
    runner: Runner, member: Member, heartbeat: Heartbeat, request: ex.RunRequest
) -> str | None:
    """This member's part once its slot is held: plan the job, meet the others, run at
    the gang's instant, record the run, then commit once every member is done."""
    store, cfg, job_id = runner.store, runner.config, member.manifest.job_id
    # Members upload with retries and keep no spool: a member that cannot upload fails
    # the gang's attempt as a whole, and a later attempt runs it again.
    durability = attempt.Retried(cfg.upload_deadline_s)
    clock = measure_offset(store)
    log.info("store clock offset %+.1f ms (±%.1f)", clock.offset_s * 1e3, clock.error_s * 1e3)
    planned = _plan(request, cfg.fio, cfg.block)
    try:
        start = member.wait_for_all(heartbeat, clock)
    except TimeoutError as exc:
        # The job ends here (no failed marker: the commit itself tells the others).
        timed_out = attempt.Attempt(request, ex.failed_outcome(request, str(exc)))
        return _commit(runner, member, timed_out, durability, upload=True)
    local_start = clock.to_local(start.start_at)
    done, started_local = _run_at_start(runner, member, heartbeat, request, planned, local_start)
    if member.failed.is_set():
        raise GangFailed(gangs.failure(store, job_id, member.attempt) or "attempt failed")
    _record_run(runner, member, done, durability, start, clock, clock.to_store(started_local))
    return _commit_when_all_done(runner, member, heartbeat, done, durability)


def _plan(request: ex.RunRequest, fio: str, block: BlockTarget | None) -> attempt.Planned | str:
    """The job planned to run, or the policy's refusal of it in one line (a refused job
    still meets the gang and is recorded as refused)."""
    try:
        return attempt.prepare(request, None, fio, block)
    except PolicyError as exc:
        return attempt.refusal(exc)


def _run_at_start(
    runner: Runner,
    member: Member,
    heartbeat: Heartbeat,
    request: ex.RunRequest,
    planned: attempt.Planned | str,
    local_start: float,
) -> tuple[attempt.Attempt, float]:
    """Run the job starting at `local_start` (or record its refusal then) while watching
    the other members; the attempt and when fio started, on this host's clock."""
    cfg = runner.config
    stop_watching = threading.Event()
    watcher = member.watch(heartbeat, stop_watching)
    try:
        if isinstance(planned, str):
            _sleep_until(local_start)
            return attempt.refused(request, planned), local_start
        done = attempt.conduct(
            planned,
            fio=cfg.fio,
            should_stop=member.failed.is_set,
            grace_s=cfg.grace_s,
            before_start=lambda: _sleep_until(local_start),
            # Shared: the members run together, but no solo job runs beside them.
            host_lock=runner.host_lock(shared=True),
        )
        fio_started = done.outcome.fio_run.started_at if done.outcome.fio_run else None
        return done, fio_started.timestamp() if fio_started else local_start
    finally:
        stop_watching.set()
        watcher.join()


def _record_run(
    runner: Runner,
    member: Member,
    done: attempt.Attempt,
    durability: attempt.Retried,
    start: gangs.GangStart,
    clock: ClockOffset,
    started: float,
) -> None:
    """Stamp this member's run with its gang columns (slot, instant, skew, clock offset),
    upload it and mark the slot done; `started` is when fio started, on the store's clock."""
    outcome, job_id = done.outcome, member.manifest.job_id
    ex.set_run_columns(
        outcome,
        {
            "gang_size": member.size,
            "gang_slot": member.slot,
            "gang_attempt": member.attempt,
            "gang_start_at": datetime.fromtimestamp(start.start_at, UTC),
            "start_skew_ms": (started - start.start_at) * 1e3,
            "clock_offset_ms": clock.offset_s * 1e3,
            "clock_offset_error_ms": clock.error_s * 1e3,
        },
    )
    attempt.upload(runner.store, done, durability)
    member_done = gangs.MemberDone(
        member.slot,
        runner.config.runner_id,
        outcome.run_id,
        outcome.status,
        (outcome.error or "")[:REASON_CHARS],
        started,
        started - start.start_at,
    )
    gangs.mark_done(runner.store, job_id, member.attempt, member_done)
    log.info(
        "gang %s slot %d: run %s %s, started %+.1f ms from the gang's instant",
        job_id,
        member.slot,
        outcome.run_id,
        outcome.status,
        member_done.skew_s * 1e3,
    )


def _commit_when_all_done(
    runner: Runner,
    member: Member,
    heartbeat: Heartbeat,
    done: attempt.Attempt,
    durability: attempt.Retried,
) -> str | None:
    """Keep the slot alive until every member has uploaded, then commit all N runs with
    one marker (or count the commit another member made first)."""
    store, job_id = runner.store, member.manifest.job_id
    # Everyone uploaded? Then one commit names all N runs; until then keep the slot alive.
    while True:
        committed = _committed_status(store, job_id)
        if committed is not None:
            return _count(runner, committed)  # another member committed it
        finished = gangs.dones(store, job_id, member.attempt, member.size)
        if len(finished) == member.size:
            break
        member.check(heartbeat, done=set(finished))
        time.sleep(member.poll_s)
    members = [finished[s] for s in range(member.size)]
    bad = [m for m in members if m.status != "ok"]
    commit = done.commit(
        runner.config.runner_id,
        status="ok" if not bad else bad[0].status,
        reason="; ".join(f"slot {m.slot} ({m.runner}): {m.reason}" for m in bad),
        run_ids=tuple(m.run_id for m in members),
    )
    return _commit(runner, member, done, durability, commit=commit)


def _commit(
    runner: Runner,
    member: Member,
    done: attempt.Attempt,
    durability: attempt.Retried,
    *,
    upload: bool = False,
    commit: Commit | None = None,
) -> str | None:
    """Create the job's one commit marker (after uploading `done` when `upload`)."""
    if upload:
        attempt.upload(runner.store, done, durability)
    commit = commit or done.commit(runner.config.runner_id, run_ids=(done.outcome.run_id,))
    won = durability.commit(runner.store, commit)
    job_id = member.manifest.job_id
    if won is None:
        committed = _committed_status(runner.store, job_id)
        return None if committed is None else _count(runner, committed)
    log.info("committed gang %s: %d run(s) %s", job_id, len(commit.members), commit.status)
    return _count(runner, commit.status)


def _committed_status(store: ObjectStore, job_id: str) -> str | None:
    """The status in the job's commit marker, or None while it has none."""
    try:
        return Commit.from_bytes(store.get(layout.commit_key(job_id))[0]).status
    except NotFound:
        return None


def _count(runner: Runner, status: str) -> str:
    # Every member counts the gang's outcome as a job it ran (--max-jobs, the summary).
    setattr(runner.stats, status, getattr(runner.stats, status) + 1)
    return status
