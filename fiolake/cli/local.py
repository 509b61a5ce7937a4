"""`fiolake run`: local benchmarking with no servers (`validate` and `profiles`, which
run nothing, are in fiolake.cli.jobfiles)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from fiolake import units
from fiolake.cli import format_option, lake_option
from fiolake.cli.common import (
    IdParam,
    RunStop,
    announce_target,
    caps_options,
    current_caps,
    host_lock,
    host_lock_options,
    label_option,
    parse_labels,
    precondition_option,
    resolve_jobs,
    target_options,
    workload_options,
)
from fiolake.cli.device import (
    announce_device,
    claim_target,
    device_options,
    dir_flags_given,
    drop_mount_point,
    erase_signatures,
    mkfs_mount_point,
    mkfs_options,
    mkfs_specs,
    prepare_options,
)
from fiolake.cli.output import emit, render

_KIND_FORMAT = {
    "bytes": units.human_bytes,
    "rate": units.human_rate,
    "count": units.human_count,
    "ns": units.human_ns,
    "ms": units.human_ms,
    "percent": units.human_percent,
}


def _progress_printer(label: str) -> Any:
    from fiolake.runner.fio.process import Progress

    def show(p: Progress) -> None:
        rates = ""
        if p.eta_line:
            parts = p.eta_line.split("][")
            rates = "  ".join(s.strip("[]") for s in parts if "/s" in s or "IOPS" in s)
        click.echo(
            f"[{label}] {p.elapsed_s:4.0f}s / ~{p.expected_s:.0f}s  {rates}".rstrip(), err=True
        )

    return show


def _lock_waiter(label: str) -> Any:
    def show(holder: str) -> None:
        click.echo(f"[{label}] waiting for the host lock (held by {holder or '?'})", err=True)

    return show


def _summary_output(profile: str, run_id: str, status: str, rows: list[dict[str, Any]]) -> str:
    from fiolake.runner.report.summary import SUMMARY_METRICS

    header = f"{profile}  (run {run_id}, {status})\n"
    if not rows:
        return header + "  no fio results\n"
    out = header
    for start in range(0, len(rows), 4):  # at most 4 jobs side by side
        chunk = rows[start : start + 4]
        names = [f"{r['job_name']}#{r['job_index']}" for r in chunk]
        table_rows = [
            [label] + [_KIND_FORMAT[kind](r[key]) for r in chunk]
            for key, label, _c, _d, kind in SUMMARY_METRICS
        ]
        out += render(["metric", *names], table_rows, "table")
    return out


class _RunPrinter:
    """What `fiolake run` shows of each attempt as it is committed: warnings on stderr,
    the summary table (or rows kept for --format csv/json) on stdout."""

    def __init__(self, campaign_id: str, backend: str, fmt: str) -> None:
        self.campaign_id, self.backend, self.fmt = campaign_id, backend, fmt
        self.rows: list[dict[str, Any]] = []
        self.failed: list[str] = []

    def report(self, planned: Any, done: Any) -> None:
        """Show one committed attempt (runner.local.run_local's on_done)."""
        from fiolake.runner.report.summary import job_summaries

        name, outcome = planned.request.profile, done.outcome
        rows = job_summaries(outcome.tables["results"].to_pylist())
        flags = outcome.tables["runs"].column("flags")[0].as_py()
        if flags:
            note = ", ".join(flags)
            click.echo(f"Warning: run {outcome.run_id} ({name}) flagged {note}", err=True)
        if outcome.status == "failed":
            self.failed.append(outcome.run_id)
            click.echo(f"[{name}] run {outcome.run_id} failed: {outcome.error}", err=True)
        if self.fmt == "table":
            click.echo(_summary_output(name, outcome.run_id, outcome.status, rows))
        summary = {
            "campaign_id": self.campaign_id,
            "run_id": outcome.run_id,
            "profile": name,
            "backend": self.backend,
            "repetition": planned.request.repetition,
            "status": outcome.status,
        }
        self.rows.extend(summary | r for r in rows)


@click.command()
@click.argument("job_files", nargs=-1)
@target_options
@click.option(
    "--backend",
    default="local",
    type=IdParam("backend"),
    show_default=True,
    help="Name of the storage backend, used to compare runs (e.g. nvme, ceph-rbd).",
)
@lake_option
@workload_options
@click.option(
    "--campaign",
    type=IdParam("campaign id"),
    help="Campaign id to record (default: a new one per invocation).",
)
@label_option
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Live progress on stderr [default: only when stderr is a terminal].",
)
@precondition_option
@device_options
@prepare_options
@mkfs_options
@host_lock_options
@caps_options
@format_option()
def run(
    job_files: tuple[str, ...],
    target_dir: Path | None,
    backend: str,
    lake: str,
    runtime: int | None,
    size: int | None,
    repeat: int,
    campaign: str | None,
    label: tuple[str, ...],
    progress: bool | None,
    fmt: str,
    create_dir: bool,
    expect_mount: str | None,
    expect_fs: str | None,
    host_lock_path: Path,
    share_host: bool,
    precondition: str | None,
    device: str | None,
    destroy_data: bool,
    expect_device: tuple[str, ...],
    wipe_signatures: bool,
    purge: bool,
    prefill: bool,
    prefill_passes: int,
    mkfs: tuple[str, ...],
    mkfs_opts: tuple[str, ...],
    mount_opts: tuple[str, ...],
) -> None:
    """Run fio job files against --dir (or a raw --device) and store results in the lake.

    JOB_FILES are paths or names of shipped profiles (`fiolake profiles`); with
    none, the default suite runs (six profiles, about 90 s). Every job file is
    checked against the job-file policy before anything runs.

    \b
    Examples:
      fiolake run --dir /mnt/nvme --backend nvme-local
      fiolake run database-oltp --dir /mnt/ceph --backend ceph-rbd --runtime 30
      fiolake run my-own.fio --dir /data --format json
      fiolake run --dir "$(mktemp -d)" --runtime 2 --size 16M     # smoke test
      fiolake run random-reads --device /dev/nvme1n1 --destroy-data --backend nvme
      fiolake run random-writes --device /dev/sdb --destroy-data --mkfs ext4 --mkfs xfs

    --device writes over a whole raw block device, named by the operator (the job
    file never names it), after checks that refuse a device in use or holding data
    (docs/usage.md, "Benchmarking a block device"). With --mkfs the job files run
    on file systems fiolake makes on it, one after the other: purge, mkfs, mount
    (where only fiolake sees it), measure, unmount; `compare --by fs_type` then
    sets them side by side.

    Before fio starts, stderr names the mount point, file system and device --dir
    lands on; --expect-mount/--expect-fs make a mismatch an error.

    One fio per host: each run first locks --host-lock, so `fiolake run`s and
    runners on one host take turns instead of measuring each other; the wait is
    recorded in runs.host_lock_wait_ms. --share-host skips the lock (runs are
    flagged shared-host).

    Exit status: 0 when every run is ok, 1 when a job file is refused (nothing
    runs) or any fio run failed (it is still recorded with status 'failed'),
    2 for bad usage (e.g. a missing --dir, a target on the wrong file system),
    130/143 after SIGINT/SIGTERM: fio is stopped, the run is recorded with
    status 'interrupted', and the remaining runs do not start.
    """
    from fiolake.config import Settings
    from fiolake.ids import new_campaign_id
    from fiolake.runner import attempt, device_prep, fs_matrix
    from fiolake.runner import execute as ex
    from fiolake.runner.host import target as tg
    from fiolake.runner.local import plan_local, run_local
    from fiolake.runner.policy.check import BlockTarget

    created: list[Path] = []
    claim = None
    mount_point = None
    try:
        campaign_id = campaign or new_campaign_id()
        specs = mkfs_specs(mkfs, mkfs_opts, mount_opts, prefill=prefill)
        store = Settings.from_env(lake=lake).writable_store()
        claim = claim_target(
            target_dir,
            device,
            destroy_data=destroy_data,
            expect_device=expect_device,
            wipe_signatures=wipe_signatures,
            lake=store.url,
            protected=[host_lock_path],
            purge=purge or bool(specs and device),  # --mkfs purges: its size must be known
            prefill=prefill,
            dir_flags=dir_flags_given(create_dir, expect_mount, expect_fs),
            mkfs=bool(specs),
        )
        mount_point = mkfs_mount_point(specs)  # the job files run in it, as in a --dir
        block = None
        if claim and not specs:
            block = BlockTarget(str(claim.path), claim.identity.size_bytes)
        plan = plan_local(
            resolve_jobs(job_files, precondition),
            backend=backend,
            target_dir=target_dir or mount_point or claim.path,
            campaign_id=campaign_id,
            repeat=repeat,
            runtime_s=runtime,
            size_bytes=size,
            labels=parse_labels(label),
            caps=current_caps(),
            expect_mount=expect_mount,
            expect_fs=expect_fs,
            block=block,
            filesystems=specs,
        )
        fill = device_prep.check_prefill(claim, prefill_passes, current_caps()) if prefill else None
        # Everything about the target is checked before anything is created or run.
        lock = host_lock(host_lock_path, share_host, f"pid {os.getpid()}: fiolake run {backend}")
        if target_dir is not None:
            created = tg.ensure_dir(target_dir, create=create_dir)
            announce_target([ex.preflight(p.measured) for p in plan])
        else:
            announce_device(claim, specs, mount_point)
            erase_signatures(claim)  # the first write: no check is left that could refuse
        show = progress if progress is not None else sys.stderr.isatty()
        click.echo(
            f"campaign {campaign_id}: {len(plan)} run(s), about "
            f"{sum(p.expected_s for p in plan):.0f} s of fio, lake {store.url}",
            err=True,
        )
        printer = _RunPrinter(campaign_id, backend, fmt)

        def options_for(p: Any) -> dict[str, Any]:
            name = p.request.profile
            return {
                "on_progress": _progress_printer(name) if show else None,
                "should_stop": stop.reason,
                "host_lock": lock,
                "on_lock_wait": _lock_waiter(name),
            }

        # SIGTERM/SIGINT stop fio and end the loop; the stopped run is still recorded.
        with RunStop() as stop:
            turn = device_prep.HostTurn(lock, stop.reason, _lock_waiter(device_prep.PURGE_PROFILE))
            conduct = lambda p: attempt.conduct(p, **options_for(p))  # noqa: E731
            if specs and mount_point is not None:
                done = fs_matrix.run_matrix(
                    store,
                    claim,
                    plan,
                    specs,
                    mount_point,
                    options_for=options_for,
                    turn=turn,
                    stopped=lambda: bool(stop.signum),
                    on_done=printer.report,
                )
            else:
                plan = device_prep.prepared_plan(
                    store, claim, plan, purge=purge, prefill=fill, conduct=conduct, turn=turn
                )
                done = run_local(
                    store,
                    plan,
                    stopped=lambda: bool(stop.signum),
                    on_done=printer.report,
                    options_for=options_for,
                )
    except Exception:
        # A refused or failed run leaves no directory behind that it created (only empty
        # ones go); the group maps the error itself.
        tg.remove_created(created)
        raise
    finally:
        if claim is not None:
            claim.release()
        drop_mount_point(mount_point)
    if fmt != "table" and printer.rows:
        columns = list(printer.rows[0])
        emit(columns, [[r[c] for c in columns] for r in printer.rows], fmt)
    if stop.signum:
        raise stop.exit_error(len(plan) - done, store.url)
    if printer.failed:
        raise click.ClickException(
            f"{len(printer.failed)} of {len(plan)} run(s) failed; see runs.error in the lake "
            f"({store.url})"
        )
