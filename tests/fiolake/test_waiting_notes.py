"""`waiting/` notes carry their time: `status` shows their age and ignores notes older
than the job's last claim (they explain a wait that claim ended)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from click.testing import CliRunner

from fiolake import layout
from fiolake.campaign_progress import campaign_status
from fiolake.cli import cli
from fiolake.lease import claim_lease, release_lease
from fiolake.store import LocalStore
from tests.signed_jobs import publish_signed


def _note(store: LocalStore, job_id: str, runner: str, reason: str, age_s: float) -> None:
    """A runner's note, written `age_s` seconds ago by the store's clock (its mtime)."""
    key = layout.waiting_key(job_id, runner)
    store.put(key, json.dumps({"runner": runner, "reason": reason, "at": "?"}).encode())
    then = time.time() - age_s
    os.utime(store.root / key, (then, then))


def test_status_shows_the_age_of_a_waiting_reason(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "lake")
    [manifest], _ = publish_signed(store, tmp_path / "k", "c-1")
    job_id = layout.parse_job_key(manifest.key)[1]
    _note(store, job_id, "r1", "cannot verify the manifest yet: OpenBao down", 125)
    [job] = campaign_status(store, "c-1")
    assert (job.state, job.reason) == (
        "pending",
        "r1: cannot verify the manifest yet: OpenBao down",
    )
    assert job.reason_age_s is not None and 124 <= job.reason_age_s <= 135
    res = CliRunner().invoke(cli, ["status", "--campaign", "c-1", "--lake", str(store.root)])
    assert res.exit_code == 0, res.output
    header, row = res.stdout.splitlines()[:2], res.stdout.splitlines()[2]
    assert header[0].split()[-2:] == ["reason", "reason_age_s"]
    assert row.split()[-1] in {f"{s}s" for s in range(124, 136)}


def test_notes_older_than_the_last_claim_are_ignored(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "lake")
    [manifest], _ = publish_signed(store, tmp_path / "k", "c-1")
    job_id = layout.parse_job_key(manifest.key)[1]
    _note(store, job_id, "r1", "not run here: wrong file system", 60)
    lease = claim_lease(store, job_id, "r2", ttl_s=30)
    assert lease is not None
    release_lease(store, lease)  # handed back: the job waits again
    [job] = campaign_status(store, "c-1")
    assert (job.state, job.reason, job.reason_age_s) == ("stale-lease", None, None)
    _note(store, job_id, "r3", "not run here: wrong file system", 0)  # since the claim
    [job] = campaign_status(store, "c-1")
    assert (job.state, job.reason) == ("stale-lease", "r3: not run here: wrong file system")
    assert job.reason_age_s is not None and job.reason_age_s < 5
