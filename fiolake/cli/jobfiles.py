"""`fiolake validate` and `fiolake profiles`: job files checked and listed, no I/O."""

from __future__ import annotations

from typing import Any

import click

from fiolake.cli import format_option
from fiolake.cli.common import caps_options, current_caps, precondition_option, resolve_jobs
from fiolake.cli.output import emit
from fiolake.errors import PolicyError


@click.command()
@click.argument("job_files", nargs=-1)
@click.option("--list", "list_allowed", is_flag=True, help="Print the allowed options and exit.")
@click.option(
    "--target",
    type=click.Choice(["dir", "device"]),
    default="dir",
    show_default=True,
    help="Check for this kind of target: 'device' is a raw block device (`run --device`, "
    "`publish --target device`), where trims are allowed and files are not.",
)
@precondition_option
@caps_options
def validate(
    job_files: tuple[str, ...],
    list_allowed: bool,
    target: str,
    precondition: str | None,
) -> None:
    """Check job files against the job-file policy and `fio --parse-only`; no I/O.

    Each refusal names the section, the option and why. See docs/job-file-policy.md.
    A job file's precondition job (its '# precondition: NAME' line, or
    --precondition) is checked on the job file's files too. An accepted file's line
    says what ends each job: its runtime (time-bound), its size (size-bound; the
    whole device when a job on a device target sets none), or whichever comes first.

    \b
    Examples:
      fiolake validate my-own.fio
      fiolake validate ssd-trim.fio --target device
      fiolake validate --list          # the allowlist
    """
    from fiolake.runner import attempt
    from fiolake.runner.policy.check import BlockTarget, allowed_options

    if list_allowed:
        for name, note in sorted(allowed_options().items()):
            click.echo(f"{name}\t{note}")
        return
    if not job_files:
        raise click.UsageError("name at least one job file (or a profile), or use --list")
    caps = current_caps()
    block = BlockTarget() if target == "device" else None
    problems = []
    for source in resolve_jobs(job_files, precondition):
        try:
            checked = attempt.check(source, caps=caps, block=block)
        except PolicyError as exc:
            problems += exc.violations
            continue
        fill = f", precondition {source.precondition.profile}" if source.precondition else ""
        click.echo(
            f"ok  {source.profile}: {len(checked.measured.job.jobs)} job(s), "
            f"{_bounds(checked.measured, on_device=block is not None)}{fill}"
        )
    if problems:
        raise PolicyError(problems)


def _bounds(checked: Any, *, on_device: bool) -> str:
    """What ends the jobs of a checked file, each distinct bound once ('(×N)' if shared)."""
    from collections import Counter

    from fiolake.runner.policy.duration import what_bounds

    found = Counter(
        what_bounds(s, capped=s.name in checked.capped_jobs, on_device=on_device)
        for s in checked.job.jobs
    )
    return "; ".join(f"{b} (×{n})" if n > 1 else b for b, n in found.items())


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
