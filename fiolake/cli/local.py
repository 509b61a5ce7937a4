"""`fiolake run`, `validate`, `profiles`: local benchmarking with no servers."""

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
    parse_labels,
    precondition_option,
    resolve_job_files,
    resolve_precondition,
    target_options,
    workload_options,
)
from fiolake.cli.output import emit, render
from fiolake.errors import PolicyError

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
@click.option("--label", multiple=True, metavar="KEY=VALUE", help="Recorded in runs.labels.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Live progress on stderr [default: only when stderr is a terminal].",
)
@precondition_option
@host_lock_options
@caps_options
@format_option()
def run(
    job_files: tuple[str, ...],
    target_dir: Path,
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
) -> None:
    """Run fio job files against --dir and store results in the lake.

    JOB_FILES are paths or names of shipped profiles (`fiolake profiles`); with
    none, the default suite runs (six profiles, about 90 s). Every job file is
    checked against the job-file policy before anything runs.

    \b
    Examples:
      fiolake run --dir /mnt/nvme --backend nvme-local
      fiolake run database-oltp --dir /mnt/ceph --backend ceph-rbd --runtime 30
      fiolake run my-own.fio --dir /data --format json
      fiolake run --dir "$(mktemp -d)" --runtime 2 --size 16M     # smoke test

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
    from fiolake.ids import new_campaign_id, new_job_id
    from fiolake.runner import execute as ex
    from fiolake.runner import precondition as pc
    from fiolake.runner.host import target as tg
    from fiolake.runner.lake_writer import commit_outcome, upload_outcome
    from fiolake.runner.report.summary import job_summaries

    created: list[Path] = []
    try:
        caps = current_caps()
        labels = parse_labels(label)
        campaign_id = campaign or new_campaign_id()
        store = Settings.from_env(lake=lake).store()
        prepared = []
        fills: list[Any] = []  # the precondition job of each prepared run, or None
        fill = resolve_precondition(precondition)
        files = resolve_job_files(job_files)
        # Interleaved: every job file once, then again (job1 rep0, job2 rep0, job1 rep1 …),
        # so a drift over the session is spread over them; runs.sequence keeps the order.
        plan = [(rep, profile, text) for rep in range(repeat) for profile, text in files]
        for sequence, (rep, profile, text) in enumerate(plan):
            request = ex.RunRequest(
                job_file_text=text,
                profile=profile,
                backend=backend,
                target_dir=target_dir,
                job_id=new_job_id(campaign_id, profile, backend, rep, unique=True),
                campaign_id=campaign_id,
                repetition=rep,
                sequence=sequence,
                runtime_s=runtime,
                size_bytes=size,
                labels=labels,
                caps=caps,
                expect_mount=expect_mount,
                expect_fs=expect_fs,
            )
            try:
                prepared.append(ex.prepare(request))
            except PolicyError as exc:
                raise PolicyError([f"{profile}: {v}" for v in exc.violations]) from None
            if fill is None:
                fills.append(None)
                continue
            try:
                fills.append(pc.prepare(prepared[-1], fill[1], fill[0]))
            except PolicyError as exc:
                raise PolicyError(
                    [f"{fill[0]} (--precondition): {v}" for v in exc.violations]
                ) from None
        # Everything about the target is checked before anything is created or run.
        lock = host_lock(host_lock_path, share_host, f"pid {os.getpid()}: fiolake run {backend}")
        created = tg.ensure_dir(target_dir, create=create_dir)
        announce_target([ex.preflight(p) for p in prepared])
        show = progress if progress is not None else sys.stderr.isatty()
        total = sum(p.expected_s for p in prepared)
        click.echo(
            f"campaign {campaign_id}: {len(prepared)} run(s), about {total:.0f} s of fio, "
            f"lake {store.url}",
            err=True,
        )
        all_rows: list[dict[str, Any]] = []
        failed = done = 0
        # SIGTERM/SIGINT stop fio and end the loop; the stopped run is still recorded.
        with RunStop() as stop:
            for p, fill_job in zip(prepared, fills, strict=True):
                if stop.signum:
                    break
                name = p.request.profile
                run_options: dict[str, Any] = {
                    "on_progress": _progress_printer(name) if show else None,
                    "should_stop": stop.reason,
                    "host_lock": lock,
                    "on_lock_wait": _lock_waiter(name),
                }
                before = None
                if fill_job is None:
                    outcome = ex.execute(p, **run_options)
                else:
                    outcome, before = pc.execute(p, fill_job, **run_options)
                    if before is not None:
                        upload_outcome(store, before)
                upload_outcome(store, outcome)
                commit_outcome(
                    store,
                    outcome,
                    job_id=p.request.job_id,
                    campaign_id=campaign_id,
                    runner=p.request.runner,
                    with_runs=(before.run_id,) if before else (),
                )
                done += 1
                rows = job_summaries(outcome.tables["results"].to_pylist())
                flags = outcome.tables["runs"].column("flags")[0].as_py()
                if flags:
                    note = ", ".join(flags)
                    click.echo(f"Warning: run {outcome.run_id} ({name}) flagged {note}", err=True)
                if outcome.status == "failed":
                    failed += 1
                    click.echo(f"[{name}] run {outcome.run_id} failed: {outcome.error}", err=True)
                if fmt == "table":
                    click.echo(_summary_output(name, outcome.run_id, outcome.status, rows))
                all_rows += [
                    {
                        "campaign_id": campaign_id,
                        "run_id": outcome.run_id,
                        "profile": name,
                        "backend": backend,
                        "repetition": p.request.repetition,
                        "status": outcome.status,
                    }
                    | r
                    for r in rows
                ]
    except Exception:
        # A refused or failed run leaves no directory behind that it created (only empty
        # ones go); the group maps the error itself.
        tg.remove_created(created)
        raise
    if fmt != "table" and all_rows:
        columns = list(all_rows[0])
        emit(columns, [[r[c] for c in columns] for r in all_rows], fmt)
    if stop.signum:
        raise stop.exit_error(len(prepared) - done, store.url)
    if failed:
        raise click.ClickException(
            f"{failed} of {len(prepared)} run(s) failed; see runs.error in the lake ({store.url})"
        )


@click.command()
@click.argument("job_files", nargs=-1)
@click.option("--list", "list_allowed", is_flag=True, help="Print the allowed options and exit.")
@caps_options
def validate(
    job_files: tuple[str, ...],
    list_allowed: bool,
) -> None:
    """Check job files against the job-file policy and `fio --parse-only`; no I/O.

    Each refusal names the section, the option and why. See docs/job-file-policy.md.

    \b
    Examples:
      fiolake validate my-own.fio
      fiolake validate --list          # the allowlist
    """
    from fiolake.runner import execute as ex
    from fiolake.runner.policy.check import allowed_options

    if list_allowed:
        for name, note in sorted(allowed_options().items()):
            click.echo(f"{name}\t{note}")
        return
    if not job_files:
        raise click.UsageError("name at least one job file (or a profile), or use --list")
    caps = current_caps()
    problems = []
    for profile, text in resolve_job_files(job_files):
        request = ex.RunRequest(
            job_file_text=text,
            profile=profile,
            backend="validate",
            target_dir=Path("/nonexistent-target"),
            job_id="validate",
            campaign_id="validate",
            caps=caps,
        )
        try:
            prepared = ex.prepare(request)
        except PolicyError as exc:
            problems += [f"{profile}: {v}" for v in exc.violations]
            continue
        click.echo(
            f"ok  {profile}: {len(prepared.job.jobs)} job(s), about {prepared.expected_s:.0f} s"
        )
    if problems:
        raise PolicyError(problems)


@click.command()
@format_option()
def profiles(fmt: str) -> None:
    """List the shipped fio profiles (job_files/) and the workload each models."""
    from fiolake.runner.policy.check import check_job_file, expected_seconds
    from fiolake.runner.profiles import DEFAULT_SUITE, list_profiles

    rows = []
    for p in list_profiles():
        job = check_job_file(p.path.read_text())
        rows.append(
            [p.name, p.name in DEFAULT_SUITE, len(job.jobs), expected_seconds(job), p.description]
        )
    columns = ["profile", "default_suite", "jobs", "seconds", "models"]
    formatters = {"seconds": lambda v: f"{v:.0f}", "models": lambda v: _shorten(v, 72)}
    emit(columns, rows, fmt, formatters)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
