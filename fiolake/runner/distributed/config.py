"""A runner's settings (`RunnerConfig`) and its counters (`RunnerStats`): what the runner
loop (runner.distributed.service) and its gang members (runner.distributed.gang) share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fiolake.runner.policy.check import BlockTarget, Caps


@dataclass(frozen=True)
class RunnerConfig:
    """How one runner behaves; see `fiolake runner --help`."""

    backend: str
    target_dir: Path
    runner_id: str
    spool_dir: Path
    labels: dict[str, str] = field(default_factory=dict)
    ttl_s: float = 60.0
    poll_s: float = 1.0
    upload_deadline_s: float = 600.0
    max_jobs: int | None = None
    idle_exit_s: float | None = None
    once: bool = False
    caps: Caps = field(default_factory=Caps)
    fio: str = "fio"
    grace_s: float = 10.0
    expect_mount: str | None = None  # re-checked before every job (runner.host.target)
    expect_fs: str | None = None
    # One fio per host (runner.host.lock): solo jobs lock it exclusive, gang members
    # shared; None = --share-host (no lock, runs flagged shared-host).
    host_lock: Path | None = None
    # A raw block device (`--device`, claimed by the CLI for the runner's life) instead of
    # target_dir: the runner takes only manifests with target 'device', and nothing else.
    block: BlockTarget | None = None
    # The options mkfs got when the runner made target_dir's file system (`--mkfs`).
    mkfs_options: str | None = None


@dataclass
class RunnerStats:
    """What a runner did before it stopped."""

    ok: int = 0
    failed: int = 0
    rejected: int = 0
    lost: int = 0  # attempts whose lease was taken over or whose commit lost

    @property
    def jobs(self) -> int:
        return self.ok + self.failed + self.rejected
