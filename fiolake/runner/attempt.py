"""One run attempt, one pipeline: check → run (its precondition first) → write → commit.

`fiolake run`, the solo runner (runner.distributed.service) and every gang member
(runner.distributed.gang) conduct their attempts through these functions. What differs
between them is an argument, the durability rule (`Plain`, `Retried`, `Spooled`):

- `Plain`: every object PUT once, the first failure raises (`fiolake run`: its user is there).
- `Retried`: PUT with retries until a deadline (gang members: nothing to resume, the
  gang's attempt fails as a whole if a member cannot upload).
- `Spooled`: written to the runner's local spool first, then PUT with retries; what a
  crash or a longer outage leaves behind is resumed by the runner's next pass
  (`Runner.drain_spool` → `commit_spooled`).

`check` is the one policy-check entry point: `validate`, `publish`, `run` and the runner
call it with a job file (and its precondition job) and get the same refusals, each
naming the file it is about.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fiolake.commits import Commit, new_commit
from fiolake.errors import PolicyError
from fiolake.runner import execute as ex
from fiolake.runner import precondition as pc
from fiolake.runner.lake_writer import commit_marker, outcome_objects
from fiolake.runner.policy.check import BlockTarget, Caps
from fiolake.runner.spool import Spool, SpoolEntry, put_with_retry
from fiolake.store import ObjectStore


@dataclass(frozen=True)
class NamedJobFile:
    """A job file's text under its profile name, with the job that preconditions it."""

    profile: str
    text: str
    precondition: NamedJobFile | None = None


@dataclass(frozen=True)
class Checked:
    """A job file (and its precondition job) that passed the policy and fio's parser."""

    measured: ex.CheckedJob
    fill: ex.CheckedJob | None
    source: NamedJobFile


@dataclass(frozen=True)
class Planned:
    """A checked attempt with the request it runs under."""

    measured: ex.PreparedJob
    fill: ex.PreparedJob | None

    @property
    def request(self) -> ex.RunRequest:
        """The measured run's request (identity, target, labels)."""
        return self.measured.request

    @property
    def expected_s(self) -> float:
        """Seconds of fio the attempt should need (without its precondition's)."""
        return self.measured.expected_s


def check(
    source: NamedJobFile,
    *,
    caps: Caps,
    runtime_s: int | None = None,
    size_bytes: int | None = None,
    fio: str = "fio",
    block: BlockTarget | None = None,
) -> Checked:
    """Check a job file and its precondition job; PolicyError names the file of each
    refusal (`<profile>: …`, `<fill> (precondition of <profile>): …`). `block`: the
    target is a raw device (runner.policy.blocktarget)."""
    try:
        measured = ex.check_job(
            source.text,
            caps=caps,
            runtime_s=runtime_s,
            size_bytes=size_bytes,
            fio=fio,
            block=block,
        )
    except PolicyError as exc:
        raise PolicyError([f"{source.profile}: {v}" for v in exc.violations]) from None
    fill = source.precondition
    if fill is None:
        return Checked(measured, None, source)
    try:
        # No --runtime/--size override: sizes are the measured job's, the time bound is
        # the precondition job's own.
        checked_fill = ex.check_job(
            fill.text,
            caps=caps,
            fio=fio,
            reshape=lambda j: pc.on_files_of(measured.job, j),
            block=block,
        )
    except PolicyError as exc:
        where = f"{fill.profile} (precondition of {source.profile})"
        raise PolicyError([f"{where}: {v}" for v in exc.violations]) from None
    return Checked(measured, checked_fill, source)


def check_all(
    sources: Sequence[NamedJobFile],
    *,
    caps: Caps,
    runtime_s: int | None = None,
    size_bytes: int | None = None,
    fio: str = "fio",
    block: BlockTarget | None = None,
) -> list[Checked]:
    """`check` every job file; one PolicyError listing every refusal of every file."""
    checked, problems = [], []
    for source in sources:
        try:
            checked.append(
                check(
                    source,
                    caps=caps,
                    runtime_s=runtime_s,
                    size_bytes=size_bytes,
                    fio=fio,
                    block=block,
                )
            )
        except PolicyError as exc:
            problems += exc.violations
    if problems:
        raise PolicyError(problems)
    return checked


def plan(checked: Checked, request: ex.RunRequest) -> Planned:
    """`checked` to run under `request`; the precondition run gets its own role and name."""
    fill = None
    if checked.fill is not None and checked.source.precondition is not None:
        fill_request = replace(
            request,
            job_file_text=checked.source.precondition.text,
            profile=checked.source.precondition.profile,
            role=pc.ROLE,
            runtime_s=None,
            size_bytes=None,
        )
        fill = ex.with_request(checked.fill, fill_request)
    return Planned(ex.with_request(checked.measured, request), fill)


def prepare(
    request: ex.RunRequest,
    precondition: NamedJobFile | None = None,
    fio: str = "fio",
    block: BlockTarget | None = None,
) -> Planned:
    """`check` the request's job file (and `precondition`), then `plan` it under `request`
    (on the raw device `block`, when the runner has one)."""
    source = NamedJobFile(request.profile, request.job_file_text, precondition)
    checked = check(
        source,
        caps=request.caps,
        runtime_s=request.runtime_s,
        size_bytes=request.size_bytes,
        fio=fio,
        block=block,
    )
    return plan(checked, request)


@dataclass
class Attempt:
    """What one attempt produced: the measured run and, before it, its precondition run."""

    request: ex.RunRequest
    outcome: ex.RunOutcome
    before: ex.RunOutcome | None = None

    @property
    def run_ids(self) -> tuple[str, ...]:
        """The runs the attempt's commit names: the measured one first."""
        return (self.outcome.run_id,) + ((self.before.run_id,) if self.before else ())

    def objects(self) -> dict[str, bytes]:
        """Every object of every run of the attempt, by key."""
        objects = outcome_objects(self.outcome)
        if self.before is not None:
            objects |= outcome_objects(self.before)
        return objects

    def commit(
        self,
        runner: str,
        *,
        status: str | None = None,
        reason: str | None = None,
        run_ids: tuple[str, ...] | None = None,
    ) -> Commit:
        """The job's commit marker for this attempt. A gang's names every member's run in
        slot order (`run_ids`), and its run id is slot 0's, whoever commits it."""
        members = run_ids or (self.run_ids if self.before else ())
        return new_commit(
            self.request.job_id,
            members[0] if run_ids else self.outcome.run_id,
            self.request.campaign_id,
            runner,
            status or self.outcome.status,
            (self.outcome.error or "") if reason is None else reason,  # new_commit cuts it
            members,
        )


def refused(request: ex.RunRequest, reason: str) -> Attempt:
    """The attempt of a job the runner refused (its manifest or job file): recorded,
    never run."""
    return Attempt(request, ex.rejected_outcome(request, reason))


def refusal(exc: PolicyError) -> str:
    """A policy refusal on one line: it also goes into the commit marker and `status`."""
    return "job file refused: " + "; ".join(exc.violations)


def conduct(
    planned: Planned,
    *,
    fio: str = "fio",
    grace_s: float = 10.0,
    should_stop: Callable[[], bool | str | None] | None = None,
    on_progress: Callable[[Any], None] | None = None,
    host_lock: Any = None,
    on_lock_wait: Callable[[str], None] | None = None,
    before_start: Callable[[], None] | None = None,
) -> Attempt:
    """Run the attempt: its precondition job, then the measured one, under one hold of the
    host lock (runner.execute, runner.precondition). Failures are recorded, not raised."""
    options: dict[str, Any] = {
        "fio": fio,
        "grace_s": grace_s,
        "should_stop": should_stop,
        "on_progress": on_progress,
        "on_lock_wait": on_lock_wait,
        "before_start": before_start,
    }
    if planned.fill is None:
        return Attempt(
            planned.request, ex.execute(planned.measured, host_lock=host_lock, **options)
        )
    outcome, before = pc.execute(planned.measured, planned.fill, host_lock=host_lock, **options)
    return Attempt(planned.request, outcome, before)


# -- durability ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Plain:
    """Each object PUT once; a failure raises at once (`fiolake run`)."""

    def put(self, store: ObjectStore, key: str, data: bytes) -> None:
        """Write one object."""
        store.put(key, data)

    def commit(self, store: ObjectStore, commit: Commit) -> Commit | None:
        """Create the commit marker; the winner (None: another attempt's)."""
        return commit_marker(store, commit)


@dataclass(frozen=True)
class Retried:
    """Each object PUT with retries for up to `deadline_s` (runner.spool.put_with_retry)."""

    deadline_s: float

    def put(self, store: ObjectStore, key: str, data: bytes) -> None:
        """Write one object, retrying transient failures until the deadline."""
        put_with_retry(store, key, data, deadline_s=self.deadline_s)

    def commit(self, store: ObjectStore, commit: Commit) -> Commit | None:
        """Create the commit marker with retries; the winner (None: another attempt's)."""
        return commit_marker(store, commit, deadline_s=self.deadline_s)


@dataclass(frozen=True)
class Spooled(Retried):
    """`Retried`, with the attempt kept in a local spool until it is committed."""

    spool: Spool = field(kw_only=True)


Durability = Plain | Retried | Spooled

# What `record` returns when the attempt was no longer ours at commit time.
LOST = "lost"


def upload(store: ObjectStore, attempt: Attempt, durability: Durability) -> None:
    """Write every object of `attempt` under `durability` (idempotent: keys are per run)."""
    for key, data in attempt.objects().items():
        durability.put(store, key, data)


def record(
    store: ObjectStore,
    attempt: Attempt,
    durability: Durability,
    *,
    runner: str,
    still_ours: Callable[[], bool] | None = None,
) -> Commit | None | str:
    """Upload the attempt, then commit it: the commit marker that won (None: another
    attempt's), or LOST when `still_ours` says the job was taken over before the commit
    (nothing is committed; the uploaded objects are orphans compaction ignores)."""
    commit = attempt.commit(runner)
    entry = keep(attempt, commit, durability)
    # An upload or commit that raises leaves the spool entry for the next pass to resume.
    upload(store, attempt, durability)
    if still_ours is not None and not still_ours():
        won: Commit | None | str = LOST
    else:
        won = durability.commit(store, commit)
    if entry is not None and isinstance(durability, Spooled):
        durability.spool.remove(entry)
    return won


def keep(attempt: Attempt, commit: Commit, durability: Durability) -> SpoolEntry | None:
    """Spool the attempt with its commit under `Spooled` (resumed by `commit_spooled`)."""
    if not isinstance(durability, Spooled):
        return None
    meta = {
        "job_id": commit.job_id,
        "campaign_id": commit.campaign_id,
        "runner": commit.runner,
        "status": commit.status,
        "reason": commit.reason,
    }
    if commit.members:  # one attempt, several runs: one commit names them all
        meta["members"] = " ".join(commit.members)
    return durability.spool.add(attempt.outcome.run_id, attempt.objects(), meta)


def commit_spooled(
    store: ObjectStore,
    entry: SpoolEntry,
    durability: Spooled,
    *,
    still_ours: Callable[[], bool] | None = None,
) -> Commit | None | str:
    """Upload and commit an attempt a crash or an outage left in the spool: the winner,
    or LOST when `still_ours` says the job was taken over during the upload (nothing
    committed, the entry dropped: the job is another runner's). The upload can outlast
    the lease (a slow store: seen taking 6.3 s for one object, longer than a 6 s lease,
    while another runner took the job over), so the lease is read again after it."""
    meta = entry.meta
    for key, data in entry.objects():
        durability.put(store, key, data)
    if still_ours is not None and not still_ours():
        durability.spool.remove(entry)
        return LOST
    commit = new_commit(
        meta["job_id"],
        entry.run_id,
        meta["campaign_id"],
        meta["runner"],
        meta["status"],
        meta.get("reason", ""),  # spooled by an older runner: no reason
        tuple(meta.get("members", "").split()),
    )
    won = durability.commit(store, commit)
    durability.spool.remove(entry)
    return won
