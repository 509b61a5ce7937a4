"""`fiolake run --device PATH --destroy-data --mkfs ext4 --mkfs xfs …`: one device, several
file systems, each measured from the same start.

runner.local plans the runs in blocks (every job file's repetition r on one file system,
then on the next, then repetition r + 1): the drift of a session spreads over every file
system. Each block runs on a file system of its own: purge (a run of role 'purge',
runner.device_prep) → mkfs → mount (runner.host.mkfs: in fiolake's private mount
namespace, unmounted whatever happens) → the block's runs, as runs on a directory of that
mount → unmount. The first measured run of a block records device_start 'purged'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

from fiolake.runner import attempt, device_prep
from fiolake.runner.host import mkfs
from fiolake.runner.host.device import DeviceClaim
from fiolake.runner.local import run_local
from fiolake.store import ObjectStore


def blocks(plan: Sequence[attempt.Planned]) -> list[list[attempt.Planned]]:
    """`plan` cut where the repetition or the file system changes."""

    def key(p: attempt.Planned) -> tuple[int, str | None]:
        return p.request.repetition, p.request.expect_fs

    return [list(group) for _, group in groupby(plan, key=key)]


def run_matrix(
    store: ObjectStore,
    claim: DeviceClaim,
    plan: Sequence[attempt.Planned],
    specs: Sequence[mkfs.FsSpec],
    mount_point: Path,
    *,
    options_for: Callable[[attempt.Planned], dict[str, Any]],
    turn: device_prep.HostTurn,
    stopped: Callable[[], bool],
    on_done: Callable[[attempt.Planned, attempt.Attempt], None],
) -> int:
    """Run `plan` (runner.local.plan_local with `specs`) block by block, each on a fresh
    file system on `mount_point`; how many measured runs ran. Stops between runs when
    `stopped()`; FiolakeError when a purge, mkfs or mount fails (nothing more runs)."""
    mkfs.enter_private_namespace()
    by_type = {spec.fs_type: spec for spec in specs}
    count = 0
    for block in blocks(plan):
        if stopped():
            break
        block = device_prep.prepared_plan(
            store,
            claim,
            block,
            purge=True,
            prefill=None,
            conduct=lambda p: attempt.conduct(p, **options_for(p)),
            turn=turn,
        )
        if stopped():
            break
        with mkfs.made_fs(claim, by_type[str(block[0].request.expect_fs)], mount_point):
            count += run_local(
                store, block, stopped=stopped, on_done=on_done, options_for=options_for
            )
    return count
