"""`fiolake runner`: pull signed jobs for one backend from the lake, run them on one
target (a directory, or a raw block device it holds for its whole life), commit results."""

from __future__ import annotations

import logging
import os
import signal
import socket
from pathlib import Path
from typing import Any

import click

from fiolake.cli import lake_option
from fiolake.cli.common import (
    DurationParam,
    IdParam,
    caps_options,
    current_caps,
    host_lock,
    host_lock_options,
    label_option,
    parse_labels,
    target_options,
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
)


@click.command()
@click.option(
    "--backend", required=True, type=IdParam("backend"), help="The backend this runner measures."
)
@target_options
@lake_option
@click.option(
    "--runner-id",
    default=lambda: f"{socket.gethostname()}:{os.getpid()}",
    show_default="HOST:PID",
    help="Name recorded in runs.runner.",
)
@label_option
@click.option(
    "--lease-ttl",
    type=click.FloatRange(2),
    default=60,
    show_default=True,
    help="Seconds a lease lives without renewal (renewed every TTL/3).",
)
@click.option(
    "--poll",
    type=click.FloatRange(0.05),
    default=1.0,
    show_default=True,
    help="Seconds between scans of jobs/ when idle.",
)
@click.option("--once", is_flag=True, help="One pass over the open jobs, then exit.")
@click.option("--max-jobs", type=click.IntRange(1), help="Exit after this many committed jobs.")
@click.option(
    "--idle-exit",
    type=DurationParam(),
    help="Exit after this long with nothing to do (scale to zero), e.g. 5m.",
)
@click.option(
    "--spool-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where finished runs wait for upload [default: ~/.cache/fiolake/spool/BACKEND].",
)
@click.option(
    "--upload-deadline",
    type=DurationParam(),
    default="10m",
    show_default=True,
    help="How long to retry uploads while the store is unreachable.",
)
@device_options
@mkfs_options
@host_lock_options
@caps_options
def runner(
    backend: str,
    target_dir: Path | None,
    lake: str,
    runner_id: str,
    label: tuple[str, ...],
    lease_ttl: float,
    poll: float,
    once: bool,
    max_jobs: int | None,
    idle_exit: float | None,
    spool_dir: Path | None,
    upload_deadline: float,
    create_dir: bool,
    expect_mount: str | None,
    expect_fs: str | None,
    host_lock_path: Path,
    share_host: bool,
    device: str | None,
    destroy_data: bool,
    expect_device: tuple[str, ...],
    wipe_signatures: bool,
    mkfs: tuple[str, ...],
    mkfs_opts: tuple[str, ...],
    mount_opts: tuple[str, ...],
) -> None:
    """Pull signed jobs for --backend from the lake, run them, upload and commit results.

    Protocol: verify the manifest, claim a lease (create-only / compare-and-swap),
    renew it while fio runs, upload results and raw output, then create the job's
    commit marker. A lost lease kills fio and nothing is committed. Refused
    manifests and job files are recorded as runs with status 'rejected'.
    SIGTERM: finish the current job, then exit (a job not started is released).

    One fio per host: before fio starts, a job waits for --host-lock (the lease stays
    alive; the wait is recorded in runs.host_lock_wait_ms), so runners of several
    backends on one host take turns. Gang members take it shared among themselves.
    --share-host skips it and flags every run shared-host.

    With --device PATH --destroy-data the runner benchmarks one raw block device
    (checked and held exclusively for its whole life, like `fiolake run --device`)
    and takes only jobs published with --target device; a --dir runner takes only
    the others. `fiolake status` says why a job waits for the other kind.

    With --mkfs TYPE as well, the runner purges the device, makes that file system on
    it and mounts it where only fiolake sees it (unmounted when the runner ends, however
    it ends), then takes --dir jobs and runs them there; runs record fs_type,
    mkfs_options and mount_options.

    \b
    Example:
      eval "$(fiolake stack env --role runner)"
      fiolake runner --backend nvme --dir /mnt/nvme/bench --label rack=r12
      fiolake runner --backend nvme-raw --device /dev/disk/by-id/nvme-eui.0025 --destroy-data
      fiolake runner --backend nvme-xfs --device /dev/nvme1n1 --destroy-data --mkfs xfs
    """
    from fiolake.config import Settings
    from fiolake.runner.distributed.config import RunnerConfig
    from fiolake.runner.policy.check import BlockTarget

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    settings = Settings.from_env(lake=lake)
    spool = spool_dir or Path.home() / ".cache" / "fiolake" / "spool" / backend
    [spec] = mkfs_specs(mkfs, mkfs_opts, mount_opts, one=True) or [None]
    # Measure what the user named: checked once at start, before any job is claimed.
    claim = claim_target(
        target_dir,
        device,
        destroy_data=destroy_data,
        expect_device=expect_device,
        wipe_signatures=wipe_signatures,
        lake=settings.lake,
        protected=[spool, host_lock_path],
        dir_flags=dir_flags_given(create_dir, expect_mount, expect_fs),
        mkfs=spec is not None,
    )
    mount_point = None
    try:
        mount_point = mkfs_mount_point([spec] if spec else [])
        if target_dir is not None:
            _announce_dir(target_dir, create_dir, expect_mount, expect_fs)
        else:
            announce_device(claim, [spec] if spec else [], mount_point)
        lock = host_lock(host_lock_path, share_host, runner_id)
        config = RunnerConfig(
            backend=backend,
            target_dir=target_dir or mount_point or claim.path,
            runner_id=runner_id,
            spool_dir=spool,
            labels=parse_labels(label),
            ttl_s=lease_ttl,
            poll_s=poll,
            upload_deadline_s=upload_deadline,
            max_jobs=max_jobs,
            idle_exit_s=idle_exit,
            once=once,
            caps=current_caps(),
            expect_mount=str(mount_point) if mount_point else expect_mount,
            expect_fs=spec.fs_type if spec else expect_fs,
            host_lock=None if lock is None else lock.path,
            block=BlockTarget(str(claim.path), claim.identity.size_bytes)
            if claim and not spec
            else None,
            mkfs_options=spec.mkfs_options() if spec else None,
        )
        worker = _worker(settings, config)  # the lake, the keys and the spool, checked
        if claim is not None:
            erase_signatures(claim)  # the first write: no check is left that could refuse
        if spec is None or mount_point is None:
            _serve(worker)
        else:
            _serve_on_fs(worker, claim, spec, mount_point)
    finally:
        if claim is not None:
            claim.release()
        drop_mount_point(mount_point)


def _serve_on_fs(worker: Any, claim: Any, spec: Any, mount_point: Path) -> None:
    """Purge the device, make `spec`'s file system on it, mount it (runner.host.mkfs: in
    the private mount namespace `mkfs_mount_point` entered, so even a SIGKILL of the
    runner leaves nothing mounted) and serve on it; unmounted when serving ends."""
    from fiolake.runner.host import mkfs as fs

    method = claim.purge()
    click.echo(f"purged {claim.path} ({method}); making {spec.fs_type} on it", err=True)
    with fs.made_fs(claim, spec, mount_point):
        click.echo(f"{spec.fs_type} from {claim.path} mounted on {mount_point}", err=True)
        _serve(worker)


def _announce_dir(
    target_dir: Path, create_dir: bool, expect_mount: str | None, expect_fs: str | None
) -> None:
    from fiolake.runner.host import target as tg

    tg.ensure_dir(target_dir, create=create_dir)
    where = tg.inspect(target_dir)
    warnings = tg.check_expectations(where, expect_mount=expect_mount, expect_fs=expect_fs)
    click.echo(f"target {where.path}: {where.describe()}", err=True)
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)


def _worker(settings: Any, config: Any) -> Any:
    """The runner (runner.distributed.service.Runner) on the lake, with its keys and its
    spool; each of them can still refuse (nothing has been written to a device yet)."""
    from fiolake.campaigns import store_bucket
    from fiolake.runner.distributed.history import recorded
    from fiolake.runner.distributed.service import Runner

    store = recorded(
        _probed_store(settings), settings.history, config.runner_id, settings.pause_file
    )
    return Runner(store, settings.keyring(), config, store_bucket(store))


def _probed_store(settings: Any) -> Any:
    """The lake once the store probe has an answer. A store that is down or restarting
    when the runner starts (503, a dropped connection) is waited for, as the runner waits
    out an outage later on; only a verdict (the store ignores conditional writes) or a
    configuration problem ends the runner."""
    import time

    from fiolake.errors import StoreUnavailable

    delay = 1.0
    while True:
        try:
            return settings.writable_store()
        except StoreUnavailable as exc:
            logging.getLogger("fiolake.runner").warning(
                "store unavailable, retrying: %s (the store probe before the first job; "
                "again in %.0f s)",
                exc,
                delay,
            )
            time.sleep(delay)
            delay = min(delay * 2, 30.0)


def _serve(worker: Any) -> None:
    """Run the runner loop until it stops; SIGTERM finishes the current job first."""
    config = worker.config
    runner_id, backend = config.runner_id, config.backend
    signal.signal(signal.SIGTERM, lambda *_: worker.stop_requested.set())
    where = f"device {config.block.path}" if config.block else f"dir {config.target_dir}"
    click.echo(f"runner {runner_id}: backend {backend}, {where}, lake {worker.store.url}", err=True)
    stats = worker.serve()
    click.echo(
        f"runner {runner_id} done: {stats.ok} ok, {stats.failed} failed, "
        f"{stats.rejected} rejected, {stats.lost} lost",
        err=True,
    )
