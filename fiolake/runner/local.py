"""`fiolake run` on this host: a campaign planned and checked up front, then run attempt by
attempt through runner.attempt with plain writes (the user is there to see a failure).

Repetitions are interleaved (job1 rep0, job2 rep0, job1 rep1 …) so a drift over the
session is spread over every job file; runs.sequence keeps the order. File systems made
by `--mkfs` interleave the same way (rep0 of every job file on ext4, then on xfs, …, then
rep1): runner.fs_matrix runs each such block on its own fresh file system.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fiolake.ids import new_job_id
from fiolake.runner import attempt
from fiolake.runner import execute as ex
from fiolake.runner.host.mkfs import FsSpec
from fiolake.runner.policy.check import BlockTarget, Caps
from fiolake.store import ObjectStore


def plan_local(
    sources: Sequence[attempt.NamedJobFile],
    *,
    backend: str,
    target_dir: Path,
    campaign_id: str,
    repeat: int,
    runtime_s: int | None,
    size_bytes: int | None,
    labels: Mapping[str, str],
    caps: Caps,
    expect_mount: str | None = None,
    expect_fs: str | None = None,
    fio: str = "fio",
    block: BlockTarget | None = None,
    filesystems: Sequence[FsSpec] = (),
) -> list[attempt.Planned]:
    """Every attempt of the campaign, in run order; each job file (and its precondition
    job) is checked once, before anything runs (PolicyError lists every refusal).
    `block`: the runs write over this claimed device (target_dir is then its path).
    `filesystems`: each repetition runs on each of them in turn, mounted on target_dir
    (runner.fs_matrix), which must then be that file system (expect_fs, expect_mount)."""
    checked = attempt.check_all(
        sources, caps=caps, runtime_s=runtime_s, size_bytes=size_bytes, fio=fio, block=block
    )
    made: Sequence[FsSpec | None] = filesystems or [None]
    order = [(rep, fs, one) for rep in range(repeat) for fs in made for one in checked]
    return [
        attempt.plan(
            one,
            ex.RunRequest(
                job_file_text=one.source.text,
                profile=one.source.profile,
                backend=backend,
                target_dir=target_dir,
                job_id=new_job_id(campaign_id, one.source.profile, backend, rep, unique=True),
                campaign_id=campaign_id,
                repetition=rep,
                sequence=sequence,
                runtime_s=runtime_s,
                size_bytes=size_bytes,
                labels=labels,
                caps=caps,
                expect_mount=str(target_dir) if fs else expect_mount,
                expect_fs=fs.fs_type if fs else expect_fs,
                device=block.path if block else None,
                device_start="used" if block or fs else None,
                mkfs_options=fs.mkfs_options() if fs else None,
            ),
        )
        for sequence, (rep, fs, one) in enumerate(order)
    ]


def run_local(
    store: ObjectStore,
    plan: Sequence[attempt.Planned],
    *,
    stopped: Callable[[], bool],
    on_done: Callable[[attempt.Planned, attempt.Attempt], None],
    options_for: Callable[[attempt.Planned], dict[str, Any]],
) -> int:
    """Run and commit each planned attempt in order until `stopped()`; how many ran.

    `options_for` gives runner.attempt.conduct's options for one attempt (host lock,
    progress, stop); `on_done` sees each attempt once it is committed.
    """
    count = 0
    for planned in plan:
        if stopped():
            break
        done = attempt.conduct(planned, **options_for(planned))
        attempt.record(store, done, attempt.Plain(), runner=planned.request.runner)
        count += 1
        on_done(planned, done)
    return count
