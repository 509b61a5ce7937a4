"""Purge → prefill → measure: the order that makes numbers of an SSD valid (SNIA PTS).

A fresh or trimmed SSD reads and writes faster than one in use, so what a device run
measures depends on what came before it. `--purge` returns every block to the unwritten
state (discard, or zero-fill where the device has none: runner.host.device), `--prefill`
then writes the whole device sequentially in 128 KiB blocks, twice by default, so each
measured run starts on a device in the same, steady state.

Each step is a run of its own (role 'purge' or 'prefill', committed like any run), never
compared or gated (aggregator.filters reads role 'measure' only). The measured runs name
them (`purged_by`, `prefilled_by`) and say how the device was left (`device_start`):
'prefilled' or 'purged' for the first measured run after them, 'used' for the others.

Every step says whether it did all its work: the purge (under the host lock, like fio)
refuses a device of unknown size; the prefill job names the device's size and a runtime
budget from it (`prefill_budget_s`, never above --max-runtime), is checked before anything
is written (`check_prefill`), and one that wrote less than its passes × that size is a
failed run: no measured run then starts, so none records 'prefilled'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from fiolake.errors import FiolakeError
from fiolake.ids import new_job_id, new_run_id
from fiolake.runner import attempt
from fiolake.runner import execute as ex
from fiolake.runner.fio.binary import find_fio
from fiolake.runner.host.device import DeviceClaim, whole_size
from fiolake.runner.host.lock import SHARED_FLAG, HostLock
from fiolake.runner.outcome import base_run_row, empty_tables, set_run_columns, stopped_outcome
from fiolake.runner.policy.check import BlockTarget
from fiolake.runner.policy.checks import CAP_FLAGS, Caps
from fiolake.store import ObjectStore
from fiolake.units import human_bytes

PURGE_ROLE, PREFILL_ROLE = "purge", "prefill"
PURGE_PROFILE, PREFILL_PROFILE = "device-purge", "device-prefill"
DEFAULT_PREFILL_PASSES = 2
# The prefill's runtime budget: its passes at this rate, at least PREFILL_MIN_S. Slower
# than any SSD or disk writes sequentially, so only a stalled device (or the operator's
# lower --max-runtime) stops it before the whole device is written twice.
PREFILL_FLOOR_BYTES_PER_S = 20 * 2**20
PREFILL_MIN_S = 60


def prefill_budget_s(size_bytes: int, passes: int) -> int:
    """Seconds the prefill of `passes` × `size_bytes` may take: its writes at
    PREFILL_FLOOR_BYTES_PER_S (the runtime cap, --max-runtime, may end it sooner)."""
    return max(PREFILL_MIN_S, math.ceil(passes * size_bytes / PREFILL_FLOOR_BYTES_PER_S))


def prefill_job(passes: int, size_bytes: int, runtime_s: int) -> str:
    """The prefill job: sequential 128 KiB direct writes over the whole device (`size_bytes`),
    `passes` times, within `runtime_s` (checked by the same policy as any job file)."""
    return (
        "; SNIA PTS workload-independent preconditioning: the whole device, sequentially\n"
        "[prefill]\nrw=write\nbs=128k\nioengine=libaio\niodepth=32\ndirect=1\n"
        f"size={size_bytes}\nloops={passes}\nruntime={runtime_s}\n"
    )


@dataclass(frozen=True)
class Prepared:
    """The runs that prepared the device (None: not asked for)."""

    purged_by: str | None = None
    prefilled_by: str | None = None

    def first_state(self) -> str:
        """How the first measured run finds the device."""
        return "prefilled" if self.prefilled_by else "purged" if self.purged_by else "used"


@dataclass(frozen=True)
class Prefill:
    """The prefill job, checked before anything is written: `passes` × `size_bytes` within
    `runtime_s` (its budget `budget_s`, or the lower runtime cap)."""

    checked: attempt.Checked
    passes: int
    size_bytes: int
    runtime_s: int
    budget_s: int


def check_prefill(claim: DeviceClaim, passes: int, caps: Caps) -> Prefill:
    """The prefill job for the claimed device, checked by the policy under `caps`:
    DeviceRefused for a device of unknown size, PolicyError for a job the caps refuse
    (e.g. a lower --max-iodepth), both before anything is written."""
    size = whole_size(claim.path, claim.identity.size_bytes, "--prefill")
    budget = prefill_budget_s(size, passes)
    runtime = min(budget, caps.max_runtime_s)
    source = attempt.NamedJobFile(PREFILL_PROFILE, prefill_job(passes, size, runtime))
    # The operator asked for the whole device (--prefill): the size caps, meant for job
    # files, do not shrink it; the runtime cap still bounds it.
    whole = replace(
        caps,
        max_size_bytes=max(caps.max_size_bytes, size),
        max_total_bytes=max(caps.max_total_bytes, size),
    )
    checked = attempt.check(source, caps=whole, block=BlockTarget(str(claim.path), size))
    return Prefill(checked, passes, size, runtime, budget)


@dataclass(frozen=True)
class HostTurn:
    """The host lock a purge takes like any fio run (None: --share-host), what ends the
    wait for it, and who hears about the wait."""

    lock: HostLock | None = None
    should_stop: Callable[[], Any] | None = None
    on_wait: Callable[[str], None] | None = None


def purge_outcome(
    claim: DeviceClaim, request: ex.RunRequest, turn: HostTurn = HostTurn()
) -> ex.RunOutcome:
    """Purge the device under the host lock (a whole-device discard or zero-fill loads
    the host like a fio run) and record it as a run of role 'purge' (no fio)."""
    run_id = new_run_id()
    waited = None
    if turn.lock is not None:
        waited = turn.lock.acquire(turn.should_stop, on_wait=turn.on_wait)
        if waited is None:
            return stopped_outcome(
                request, f"stopped while waiting for the host lock {turn.lock.path}"
            )
    try:
        started = datetime.now(UTC)
        method = claim.purge()
        finished = datetime.now(UTC)
    finally:
        if turn.lock is not None:
            turn.lock.release()
    row = base_run_row(request, run_id)
    row |= ex.device_environment(str(claim.path), find_fio())
    row |= {
        "status": "ok",
        "started_at": started,
        "finished_at": finished,
        "purge_method": method,
        "host_lock_wait_ms": waited,
        "flags": [] if turn.lock is not None else [SHARED_FLAG],
    }
    return ex.RunOutcome(run_id, "ok", None, started, empty_tables(row), {})


def prepare_device(
    store: ObjectStore,
    claim: DeviceClaim,
    template: ex.RunRequest,
    *,
    purge: bool,
    prefill: Prefill | None,
    conduct: Callable[[attempt.Planned], attempt.Attempt],
    turn: HostTurn = HostTurn(),
) -> Prepared:
    """Run (and commit) the purge and prefill runs `template`'s campaign asked for.

    FiolakeError when either did not do all its work (a prefill that wrote less than its
    passes × the device's size is recorded as failed): measuring a device in an unknown
    state would be the very mistake this avoids."""

    def request(profile: str, role: str, text: str, **extra: Any) -> ex.RunRequest:
        job_id = new_job_id(template.campaign_id, profile, template.backend, 0, unique=True)
        return replace(
            template,
            job_file_text=text,
            profile=profile,
            role=role,
            job_id=job_id,
            runtime_s=None,
            size_bytes=None,
            sequence=None,
            device_start=extra.pop("device_start", None),
            mkfs_options=None,  # made after the purge (runner.fs_matrix), not before it
            **extra,
        )

    done = Prepared()
    if purge:
        req = request(PURGE_PROFILE, PURGE_ROLE, "")
        purged = attempt.Attempt(req, purge_outcome(claim, req, turn))
        attempt.record(store, purged, attempt.Plain(), runner=template.runner)
        _require_done(purged.outcome, "purge")
        done = Prepared(purged_by=purged.outcome.run_id)
    if prefill is not None:
        text = prefill.checked.source.text
        fill_request = request(
            PREFILL_PROFILE,
            PREFILL_ROLE,
            text,
            device_start=done.first_state(),
            purged_by=done.purged_by,
        )
        filled = conduct(attempt.plan(prefill.checked, fill_request))
        hint = _short_fill(filled.outcome, prefill)
        attempt.record(store, filled, attempt.Plain(), runner=template.runner)
        _require_done(filled.outcome, "prefill", hint)
        done = replace(done, prefilled_by=filled.outcome.run_id)
    return done


def _short_fill(outcome: ex.RunOutcome, prefill: Prefill) -> str:
    """Mark an ok prefill that wrote less than its passes × the device's size failed (and
    cut-short), and say what to do about it; '' when it wrote them all (or had failed)."""
    passes, size, runtime = prefill.passes, prefill.size_bytes, prefill.runtime_s
    if outcome.status != "ok":
        return ""
    results = outcome.tables["results"].to_pylist()
    written = sum(r["io_bytes"] or 0 for r in results if r["direction"] == "write")
    flags = outcome.tables["runs"].column("flags")[0].as_py() or []
    if written >= passes * size and "cut-short" not in flags:
        return ""
    outcome.status = "failed"
    outcome.error = (
        f"wrote {human_bytes(written)} of {human_bytes(passes * size)} ({passes} passes × "
        f"{human_bytes(size)}) within its runtime of {runtime} s, so the device is not prefilled"
    )
    flags = flags if "cut-short" in flags else [*flags, "cut-short"]
    set_run_columns(outcome, {"status": "failed", "error": outcome.error, "flags": flags})
    if runtime < prefill.budget_s:  # the runtime cap ended it
        flag = CAP_FLAGS["max_runtime_s"]
        return f"raise {flag} to {prefill.budget_s} (the prefill's budget) and run again"
    floor = human_bytes(PREFILL_FLOOR_BYTES_PER_S)
    return f"the device wrote slower than {floor}/s: check it, then run again"


def _require_done(outcome: ex.RunOutcome, what: str, hint: str = "") -> None:
    """FiolakeError unless the purge or prefill run `outcome` is ok."""
    if outcome.status != "ok":
        raise FiolakeError(
            f"{what} run {outcome.run_id} {outcome.status}: {outcome.error} — the measured "
            f"runs did not start; {hint or 'see runs.error'}"
        )


def prepared_plan(
    store: ObjectStore,
    claim: DeviceClaim | None,
    plan: Sequence[attempt.Planned],
    *,
    purge: bool,
    prefill: Prefill | None,
    conduct: Callable[[attempt.Planned], attempt.Attempt],
    turn: HostTurn = HostTurn(),
) -> list[attempt.Planned]:
    """`plan` after the purge and prefill runs it asked for (`prepare_device`, `after`);
    unchanged without a device or without either."""
    if claim is None or not plan or not (purge or prefill):
        return list(plan)
    done = prepare_device(
        store,
        claim,
        plan[0].request,
        purge=purge,
        prefill=prefill,
        conduct=conduct,
        turn=turn,
    )
    return after(plan, done)


def after(plan: Sequence[attempt.Planned], prepared: Prepared) -> list[attempt.Planned]:
    """`plan`'s measured runs naming the runs that prepared the device, the first one
    starting on the prepared device and the others on a used one."""
    out = []
    for i, planned in enumerate(plan):
        state = prepared.first_state() if i == 0 else "used"
        request = replace(
            planned.request,
            device_start=state,
            purged_by=prepared.purged_by,
            prefilled_by=prepared.prefilled_by,
        )
        out.append(replace(planned, measured=replace(planned.measured, request=request)))
    return out
