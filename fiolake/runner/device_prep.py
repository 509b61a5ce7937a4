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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from fiolake.errors import FiolakeError
from fiolake.ids import new_job_id, new_run_id
from fiolake.runner import attempt
from fiolake.runner import execute as ex
from fiolake.runner.fio.binary import find_fio
from fiolake.runner.host.device import DeviceClaim
from fiolake.runner.outcome import base_run_row, empty_tables
from fiolake.runner.policy.check import BlockTarget
from fiolake.store import ObjectStore

PURGE_ROLE, PREFILL_ROLE = "purge", "prefill"
PURGE_PROFILE, PREFILL_PROFILE = "device-purge", "device-prefill"
DEFAULT_PREFILL_PASSES = 2


def prefill_job(passes: int) -> str:
    """The prefill job: sequential 128 KiB direct writes over the whole device, `passes`
    times (no size: the whole device; checked by the same policy as any job file)."""
    return (
        "; SNIA PTS workload-independent preconditioning: the whole device, sequentially\n"
        "[prefill]\nrw=write\nbs=128k\nioengine=libaio\niodepth=32\ndirect=1\n"
        f"loops={passes}\n"
    )


@dataclass(frozen=True)
class Prepared:
    """The runs that prepared the device (None: not asked for)."""

    purged_by: str | None = None
    prefilled_by: str | None = None

    def first_state(self) -> str:
        """How the first measured run finds the device."""
        return "prefilled" if self.prefilled_by else "purged" if self.purged_by else "used"


def purge_outcome(claim: DeviceClaim, request: ex.RunRequest) -> ex.RunOutcome:
    """Purge the device and record it as a run of role 'purge' (no fio)."""
    run_id = new_run_id()
    started = datetime.now(UTC)
    method = claim.purge()
    row = base_run_row(request, run_id)
    row |= ex.device_environment(str(claim.path), find_fio())
    row |= {
        "status": "ok",
        "started_at": started,
        "finished_at": datetime.now(UTC),
        "purge_method": method,
    }
    return ex.RunOutcome(run_id, "ok", None, started, empty_tables(row), {})


def prepare_device(
    store: ObjectStore,
    claim: DeviceClaim,
    template: ex.RunRequest,
    *,
    purge: bool,
    prefill_passes: int | None,
    conduct: Callable[[attempt.Planned], attempt.Attempt],
) -> Prepared:
    """Run (and commit) the purge and prefill runs `template`'s campaign asked for.

    FiolakeError when the prefill run fails: measuring a device in an unknown state
    would be the very mistake this avoids."""

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
            **extra,
        )

    done = Prepared()
    if purge:
        purged = attempt.Attempt(
            req := request(PURGE_PROFILE, PURGE_ROLE, ""), purge_outcome(claim, req)
        )
        attempt.record(store, purged, attempt.Plain(), runner=template.runner)
        done = Prepared(purged_by=purged.outcome.run_id)
    if prefill_passes:
        text = prefill_job(prefill_passes)
        fill_request = request(
            PREFILL_PROFILE,
            PREFILL_ROLE,
            text,
            device_start=done.first_state(),
            purged_by=done.purged_by,
        )
        block = BlockTarget(str(claim.path), claim.identity.size_bytes)
        source = attempt.NamedJobFile(PREFILL_PROFILE, text)
        planned = attempt.plan(attempt.check(source, caps=template.caps, block=block), fill_request)
        filled = conduct(planned)
        attempt.record(store, filled, attempt.Plain(), runner=template.runner)
        if filled.outcome.status != "ok":
            raise FiolakeError(
                f"prefill run {filled.outcome.run_id} {filled.outcome.status}: "
                f"{filled.outcome.error} — the measured runs did not start; see runs.error"
            )
        done = replace(done, prefilled_by=filled.outcome.run_id)
    return done


def prepared_plan(
    store: ObjectStore,
    claim: DeviceClaim | None,
    plan: Sequence[attempt.Planned],
    *,
    purge: bool,
    prefill_passes: int | None,
    conduct: Callable[[attempt.Planned], attempt.Attempt],
) -> list[attempt.Planned]:
    """`plan` after the purge and prefill runs it asked for (`prepare_device`, `after`);
    unchanged without a device or without either."""
    if claim is None or not plan or not (purge or prefill_passes):
        return list(plan)
    done = prepare_device(
        store,
        claim,
        plan[0].request,
        purge=purge,
        prefill_passes=prefill_passes,
        conduct=conduct,
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
