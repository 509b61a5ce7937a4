"""Publishing campaigns of signed job manifests: plan, sign, put, and re-run what failed.
Where a campaign stands is fiolake.campaign_progress."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from fiolake.campaign_progress import campaign_job_keys, campaign_status
from fiolake.errors import (
    FiolakeError,
    PreconditionFailed,
    UsageProblem,
)
from fiolake.manifest import Manifest, manifest_in_envelope, new_manifest, sign_manifests
from fiolake.signing import Signer
from fiolake.store import ObjectStore


def store_bucket(store: ObjectStore) -> str:
    """The bucket a manifest binds to: the S3 bucket, or '' for a local lake."""
    return getattr(store, "bucket", "")


def plan_campaign(
    job_files: Sequence[tuple[str, str]],
    backends: Sequence[str],
    *,
    campaign_id: str,
    repeat: int,
    runtime_s: int | None,
    size_bytes: int | None,
    bucket: str,
    expires_in: timedelta,
    expect_mount: str | None = None,
    expect_fs: str | None = None,
    gangs: Sequence[int] = (),
    gang_timeout_s: int | None = None,
    preconditions: Sequence[tuple[str, str] | None] = (),
    target: str = "dir",
) -> list[Manifest]:
    """One manifest per (job file, backend, repetition) — per gang size too when `gangs`
    is given (each a job N runners of the backend run together) — in a stable order.

    Repetitions are interleaved: every job file × backend of repetition 0, then of
    repetition 1, … (ABAB, not AAABBB), and each manifest records its position
    (`sequence`, then runs.sequence). Runners take open jobs lowest repetition first
    (runner.distributed.discovery), so a drift over the campaign's hours hits every backend
    alike instead of posing as a difference between them.

    `preconditions[i]` is the (profile, text) of the job run on job file i's files before
    it is measured, or None; without it, no job file has one. `target`: 'device' when
    the jobs must run on a raw block device (a runner started with --device).
    """
    fills = list(preconditions) or [None] * len(job_files)
    if len(fills) != len(job_files):
        raise ValueError("one precondition (or None) per job file")
    return [
        new_manifest(
            campaign_id=campaign_id,
            backend=backend,
            profile=profile,
            job_file_text=text,
            runtime_s=runtime_s,
            size_bytes=size_bytes,
            repetition=rep,
            bucket=bucket,
            expires_in=expires_in,
            expect_mount=expect_mount,
            expect_fs=expect_fs,
            gang=gang,
            gang_timeout_s=gang_timeout_s,
            sequence=sequence,
            precondition=fill,
            target=target,
        )
        for sequence, (profile, text, fill, backend, gang, rep) in enumerate(
            _interleaved(job_files, fills, backends, gangs, repeat)
        )
    ]


def _interleaved(
    job_files: Sequence[tuple[str, str]],
    fills: Sequence[tuple[str, str] | None],
    backends: Sequence[str],
    gangs: Sequence[int],
    repeat: int,
) -> list[tuple[str, str, tuple[str, str] | None, str, int | None, int]]:
    """(profile, text, precondition, backend, gang, repetition) in publishing order: every
    job file × backend (× gang) of repetition 0, then of repetition 1, …"""
    return [
        (profile, text, fill, backend, gang, rep)
        for rep in range(repeat)
        for (profile, text), fill in zip(job_files, fills, strict=True)
        for backend in backends
        for gang in (gangs or (None,))
    ]


def publish_manifests(
    store: ObjectStore, manifests: Sequence[Manifest], signer: Signer, *, workers: int = 16
) -> None:
    """Sign everything first (in batches where the signer can), then PUT every envelope
    create-only at its bound key, `workers` at a time.

    A campaign id is never reused: publishing into a campaign that already has jobs is
    refused before anything is written (a runner that marked the campaign done would
    never look at jobs added later).
    """
    for campaign_id in sorted({m.campaign_id for m in manifests}):
        if campaign_job_keys(store, campaign_id):
            raise UsageProblem(
                f"campaign {campaign_id} already has jobs in {store.url} — campaign ids are "
                "never reused; publish without --campaign for a new one"
            )
    envelopes = list(
        zip((m.key for m in manifests), sign_manifests(manifests, signer), strict=True)
    )

    def put(item: tuple[str, bytes]) -> None:
        key, data = item
        try:
            store.put(key, data, if_none_match=True)
        except PreconditionFailed:
            raise FiolakeError(
                f"{key} already exists — campaign ids are never reused; publish without --campaign"
            ) from None

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(put, envelopes))


def plan_rerun(
    store: ObjectStore,
    campaign_id: str,
    states: Sequence[str],
    *,
    new_campaign_id: str,
    expires_in: timedelta,
) -> list[Manifest]:
    """New attempts, in a new campaign, of the jobs of `campaign_id` that ended in one of
    `states`: same job file, backend, overrides and repetition, each linked to the job it
    re-runs (`rerun_of`). The original jobs and their runs stay as they are."""
    jobs = [j for j in campaign_status(store, campaign_id) if j.state in states]
    if not jobs:
        raise UsageProblem(
            f"campaign {campaign_id} has no {'/'.join(states)} jobs to re-run — "
            f"see `fiolake status --campaign {campaign_id}`"
        )
    out = []
    for job in jobs:
        old = manifest_in_envelope(store.get(job.key)[0])
        out.append(
            new_manifest(
                campaign_id=new_campaign_id,
                backend=old.backend,
                profile=old.profile,
                job_file_text=old.job_file,
                runtime_s=old.runtime_s,
                size_bytes=old.size_bytes,
                repetition=old.repetition,
                bucket=store_bucket(store),
                expires_in=expires_in,
                rerun_of=old.job_id,
                expect_mount=old.expect_mount,
                expect_fs=old.expect_fs,
                gang=old.gang,
                gang_timeout_s=old.gang_timeout_s,
                sequence=old.sequence,
                precondition=(
                    (old.precondition_profile or "precondition", old.precondition)
                    if old.precondition is not None
                    else None
                ),
                target=old.target or "dir",
            )
        )
    return out
