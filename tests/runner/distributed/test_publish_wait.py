"""`publish --wait` against real runner processes and real fio, on both lakes (the local
directory and the real MinIO with Vault-signed manifests): it returns once the last job
is committed — exit 0 when all are ok, 1 when one was rejected, with the counts."""

from __future__ import annotations

import time

import pytest

from fiolake.campaign_progress import campaign_status
from fiolake.config import Settings
from tests.runner.conftest import LakeEnv

pytestmark = pytest.mark.slow  # real runner processes

# psync, not null: size caps apply to a job that writes (the strict runner refuses 1 MiB).
JOB = "[w]\nioengine=psync\nrw=write\nbs=4k\nsize=1M\n"


def test_publish_wait_returns_after_the_last_commit_with_its_verdict(lake_env: LakeEnv) -> None:
    job = lake_env.tmp / "w.fio"
    job.write_text(JOB)
    lake_env.start_runner("good", "good", "--poll", "0.2")
    lake_env.start_runner("strict", "strict", "--poll", "0.2", "--max-size", "1K")

    started = time.monotonic()
    done = lake_env.cli("publisher", "publish", str(job), "--backend", "good", "--repeat", "2",
                        "--wait", "--timeout", "2m")  # fmt: skip
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    campaign = done.stdout.strip()
    assert done.stdout == f"{campaign}\n"  # only the id, first thing on stdout
    assert done.stderr.splitlines()[-1] == f"campaign {campaign}: 2 ok"
    store = Settings.from_env(lake_env.admin).store()
    assert [j.state for j in campaign_status(store, campaign)] == ["ok", "ok"]
    print(f"publish --wait, 2 jobs on {lake_env.kind}: {took:.1f} s")

    done = lake_env.cli("publisher", "publish", str(job), "--backend", "good", "--backend",
                        "strict", "--wait", "--timeout", "2m")  # fmt: skip
    assert done.returncode == 1, done.stderr
    campaign = done.stdout.strip()
    assert sorted(j.state for j in campaign_status(store, campaign)) == ["ok", "rejected"]
    lines = done.stderr.splitlines()
    assert lines[-3:] == [
        f"campaign {campaign}: 1 ok, 1 rejected",
        "  1 rejected: job file refused: w: [w] size=1M: above the cap of 1.0 KiB "
        "(raise it with --max-size)",
        f"Error: campaign {campaign}: 1 of 2 job(s) did not succeed (1 ok, 1 rejected) — "
        f"`fiolake status --campaign {campaign}` names each; re-run them with "
        f"`fiolake publish --rerun {campaign}`",
    ]
    assert "Traceback" not in done.stderr
