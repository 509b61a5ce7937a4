"""`fiolake publish`, `runner`, `status`: the distributed pipeline over an object-store lake."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import click

from fiolake.cli import lake_option
from fiolake.cli.common import (
    NO_PRECONDITION,
    DurationParam,
    IdParam,
    caps_options,
    current_caps,
    precondition_option,
    resolve_jobs,
    workload_options,
)
from fiolake.cli.status import wait_for
from fiolake.commits import RERUNNABLE
from fiolake.errors import FiolakeError


@click.command()
@click.argument("job_files", nargs=-1)
@click.option(
    "--backend",
    "backends",
    multiple=True,
    type=IdParam("backend"),
    help="Backend that must run the jobs (repeat for several); runners pick theirs.",
)
@workload_options
@click.option(
    "--expires",
    type=DurationParam(),
    default="24h",
    show_default=True,
    help="Runners refuse the manifests after this long (e.g. 30m, 24h, 7d).",
)
@click.option(
    "--campaign", type=IdParam("campaign id"), help="Campaign id (default: a new, sortable one)."
)
@click.option(
    "--expect-mount",
    metavar="PATH",
    help="Runners whose --dir is not on this mount point leave the jobs to others.",
)
@click.option(
    "--expect-fs",
    metavar="TYPE",
    help="Runners whose --dir is not on this file-system type (e.g. nfs4) leave the jobs.",
)
@click.option(
    "--rerun",
    type=IdParam("campaign id"),
    help="Publish new attempts of the jobs of this campaign that ended as --status, in a "
    "new campaign, each linked to the job it re-runs (no job files or --backend then).",
)
@click.option(
    "--status",
    "rerun_states",
    multiple=True,
    type=click.Choice(RERUNNABLE),
    help="With --rerun: which ended jobs to re-run (repeatable) [default: all three].",
)
@click.option(
    "--gang",
    "gangs",
    multiple=True,
    type=click.IntRange(1, 256),
    help="N runners of the backend run each job together, started at one instant by the "
    "store's clock; their aggregate is one result (repeat for a scaling series: 1, 2, 4).",
)
@click.option(
    "--gang-timeout",
    type=DurationParam(),
    default="10m",
    show_default=True,
    help="With --gang: the job fails ('only K of N runners') if they do not all show up.",
)
@click.option(
    "--wait",
    is_flag=True,
    help="After printing the campaign id, wait until every job is committed: exit 0 if "
    "all are ok, 1 if any failed, was rejected or interrupted (counts on stderr). On a "
    "host whose runners measure (the host lock, FIOLAKE_HOST_LOCK), each poll waits for "
    "the running fio to end (at most 60 s), so the wait never competes with a run.",
)
@click.option(
    "--timeout",
    type=DurationParam(),
    default="2h",
    show_default=True,
    help="With --wait: give up (exit 1) when jobs are still pending or running after this.",
)
@click.option(
    "--target",
    type=click.Choice(["dir", "device"]),
    default="dir",
    show_default=True,
    help="The kind of target the jobs need, signed into each manifest: 'device' jobs run "
    "only on runners started with --device (a raw block device; trim workloads are "
    "allowed there), 'dir' jobs only on runners with --dir.",
)
@precondition_option
@lake_option
@caps_options
def publish(
    job_files: tuple[str, ...],
    backends: tuple[str, ...],
    repeat: int,
    runtime: int | None,
    size: int | None,
    expires: float,
    campaign: str | None,
    expect_mount: str | None,
    expect_fs: str | None,
    rerun: str | None,
    rerun_states: tuple[str, ...],
    gangs: tuple[int, ...],
    gang_timeout: float,
    wait: bool,
    timeout: float,
    lake: str,
    precondition: str | None,
    target: str,
) -> None:
    """Publish one signed manifest per (job file, backend, repetition); print the campaign id.

    Every job file is checked with the runner's policy first: one refusal and
    nothing is published. Signing uses FIOLAKE_SIGNER=vault (VAULT_ADDR,
    VAULT_TOKEN, FIOLAKE_TRANSIT_KEY) or FIOLAKE_SIGNER=local (FIOLAKE_SIGNING_KEY).

    \b
    Examples:
      eval "$(fiolake stack env --role publisher)"
      fiolake publish database-oltp random-reads --backend disk --backend tmpfs --repeat 3
      fiolake publish --rerun c-20261123-070000-ab12 --status rejected
      fiolake publish nfs-seq-write.fio --backend nfs --gang 4
      fiolake publish sync-write-latency --backend nvme --repeat 3 --wait --timeout 1h  # CI
    """
    ctx = click.get_current_context()
    if not wait and ctx.get_parameter_source("timeout") is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--timeout is how long --wait waits — add --wait")
    if rerun is not None:
        if job_files or backends or campaign or expect_mount or expect_fs or gangs or precondition:
            raise click.UsageError(
                "--rerun takes no job files, --backend, --campaign, --expect-*, --gang or "
                "--precondition — it re-publishes the selected jobs of that campaign as they were"
            )
        campaign_id = _publish_rerun(rerun, rerun_states or RERUNNABLE, expires, lake)
        if wait:
            wait_for(campaign_id, timeout, lake)
        return
    if rerun_states:
        raise click.UsageError("--status selects jobs for --rerun — add --rerun CAMPAIGN")
    if target == "device" and (expect_mount or expect_fs):
        raise click.UsageError(
            "--expect-mount/--expect-fs with --target device — a raw device has no file "
            "system; drop them (the runner's --expect-device names its device)"
        )
    if not backends:
        raise click.UsageError("Missing option '--backend' (or --rerun CAMPAIGN).")
    if precondition and precondition.lower() != NO_PRECONDITION and gangs:
        raise click.UsageError(
            "--precondition does not work with --gang — precondition the gang's storage "
            "with a solo campaign first"
        )
    from fiolake.campaigns import plan_campaign, publish_manifests, store_bucket
    from fiolake.config import Settings
    from fiolake.ids import new_campaign_id
    from fiolake.runner import attempt
    from fiolake.runner.policy.check import BlockTarget

    caps = current_caps()
    jobs = resolve_jobs(job_files, precondition)
    if gangs and any(job.precondition for job in jobs):
        raise click.UsageError(
            "--gang does not work with preconditioning (a job file's '# precondition:' "
            "line) — precondition the gang's storage with a solo campaign first, or add "
            "--precondition none"
        )
    block = BlockTarget() if target == "device" else None  # its size: the runner's to check
    attempt.check_all(jobs, caps=caps, runtime_s=runtime, size_bytes=size, block=block)
    settings = Settings.from_env(lake=lake)
    signer = settings.signer()
    store = settings.writable_store()
    campaign_id = campaign or new_campaign_id()
    manifests = plan_campaign(
        [(job.profile, job.text) for job in jobs],
        backends,
        campaign_id=campaign_id,
        repeat=repeat,
        runtime_s=runtime,
        size_bytes=size,
        bucket=store_bucket(store),
        expires_in=timedelta(seconds=expires),
        expect_mount=expect_mount,
        expect_fs=expect_fs,
        gangs=sorted(set(gangs)),
        gang_timeout_s=max(1, round(gang_timeout)),
        preconditions=[
            (job.precondition.profile, job.precondition.text) if job.precondition else None
            for job in jobs
        ],
        target=target,
    )
    publish_manifests(store, manifests, signer)
    click.echo(f"published {len(manifests)} job(s) to {store.url}", err=True)
    click.echo(campaign_id)
    if wait:
        wait_for(campaign_id, timeout, lake)


def _publish_rerun(campaign: str, states: tuple[str, ...], expires: float, lake: str) -> str:
    from fiolake.campaigns import plan_rerun, publish_manifests
    from fiolake.config import Settings
    from fiolake.ids import new_campaign_id

    settings = Settings.from_env(lake=lake)
    store = settings.writable_store()
    new_id = new_campaign_id()
    manifests = plan_rerun(
        store, campaign, states, new_campaign_id=new_id, expires_in=timedelta(seconds=expires)
    )
    publish_manifests(store, manifests, settings.signer())
    click.echo(
        f"published {len(manifests)} re-run job(s) of campaign {campaign} "
        f"({'/'.join(states)}) to {store.url}",
        err=True,
    )
    click.echo(new_id)
    return new_id


@click.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def keygen(path: Path) -> None:
    """Create an Ed25519 signing key at PATH (0600) and its public key at PATH.pub.

    For single-machine use without Vault: publishers sign with FIOLAKE_SIGNER=local
    FIOLAKE_SIGNING_KEY=PATH; runners trust FIOLAKE_TRUSTED_KEY=PATH.pub.
    Never overwrites an existing key.
    """
    from fiolake.signing import LocalSigner, public_key_path

    try:
        signer = LocalSigner.generate(path)
    except OSError as exc:
        raise FiolakeError(
            f"cannot write key {path}: {exc.strerror} — choose a path in an existing "
            "directory you may write to"
        ) from None
    click.echo(f"{signer.keyid}\t{public_key_path(path)}")
