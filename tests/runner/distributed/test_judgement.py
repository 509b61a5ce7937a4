"""A runner commits `rejected` only for what is definitely bad; what it cannot judge it
leaves waiting, with its reason for `fiolake status`; `publish --rerun` recovers a campaign.

In-process runners on a local lake with real fio (null engine); key sources are stand-ins
whose outage the test switches (the real Vault cases are in
tests/runner/distributed/test_protocol.py).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner

from fiolake import layout
from fiolake.campaign_progress import campaign_status
from fiolake.campaigns import plan_campaign, publish_manifests
from fiolake.cli import cli
from fiolake.errors import FiolakeError
from fiolake.manifest import manifest_in_envelope
from fiolake.runner.distributed import service
from fiolake.runner.distributed.config import RunnerConfig
from fiolake.runner.distributed.service import Runner
from fiolake.runner.policy.checks import Caps
from fiolake.signing import Keyring, LocalSigner, Signature, vault_keyid
from fiolake.store import LocalStore
from tests.signed_jobs import publish_signed

JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"


class VaultLikeSigner:
    """Signs with a local key under a Vault-style key id (transit is tested elsewhere)."""

    def __init__(self, key: LocalSigner, version: int = 1):
        self.key = key
        self.keyid = vault_keyid("manifests", version, key.public_key_bytes())

    def sign(self, message: bytes) -> Signature:
        return Signature(self.keyid, self.key.sign(message).sig)

    def sign_batch(self, messages: Sequence[bytes]) -> list[Signature]:
        return [self.sign(m) for m in messages]


class Source:
    """A Vault key source whose outage the test controls."""

    source = "vault https://vault.test transit/keys/manifests"

    def __init__(self, signer: VaultLikeSigner):
        self.keys = {signer.keyid: signer.key.public_key_bytes()}
        self.down = False

    def covers(self, keyid: str) -> bool:
        return keyid.startswith("vault:")

    def __call__(self, wanted: str) -> dict[str, bytes]:
        if self.down:
            raise FiolakeError("cannot reach Vault at https://vault.test")
        return dict(self.keys)


def publish(store: LocalStore, signer: object, campaign: str, job: str = JOB) -> None:
    manifests = plan_campaign(
        [("n", job)],
        ["b"],
        campaign_id=campaign,
        repeat=2,
        runtime_s=None,
        size_bytes=None,
        bucket="",
        expires_in=timedelta(hours=1),
    )
    publish_manifests(store, manifests, signer)  # type: ignore[arg-type]


def runner(tmp_path: Path, store: LocalStore, keyring: Keyring, name: str, **cfg: object) -> Runner:
    target = tmp_path / "target"
    target.mkdir(exist_ok=True)
    config = RunnerConfig(
        backend="b", target_dir=target, runner_id=name, spool_dir=tmp_path / name, once=True
    )
    return Runner(store, keyring, replace(config, **cfg), bucket="")


def states(store: LocalStore, campaign: str) -> list[tuple[str, str | None]]:
    return [(j.state, j.reason) for j in campaign_status(store, campaign)]


def test_vault_down_leaves_jobs_waiting_with_the_reason_then_they_run(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "lake")
    signer = VaultLikeSigner(LocalSigner.generate(tmp_path / "k"))
    publish(store, signer, "c-1")
    source = Source(signer)
    source.down = True
    stats = runner(tmp_path, store, Keyring(source), "r1").serve()
    assert (stats.ok, stats.rejected) == (0, 0)
    assert list(store.list(layout.COMMITS_PREFIX)) == []
    waiting = states(store, "c-1")
    assert [s for s, _ in waiting] == ["pending", "pending"]
    assert all(
        r.startswith(
            "r1: cannot verify the manifest yet: cannot refresh signing keys: "
            "cannot reach Vault at https://vault.test"
        )
        for _, r in waiting
    )
    source.down = False
    stats = runner(tmp_path, store, Keyring(source), "r2").serve()
    assert stats.ok == 2 and states(store, "c-1") == [("ok", None), ("ok", None)]


def test_no_trust_source_for_the_key_is_not_a_verdict(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "lake")
    signer = LocalSigner.generate(tmp_path / "k")
    publish(store, signer, "c-1")
    other = VaultLikeSigner(LocalSigner.generate(tmp_path / "v"))
    stats = runner(tmp_path, store, Keyring(Source(other)), "vault-only").serve()
    assert (stats.ok, stats.rejected) == (0, 0)
    reasons = {r for _, r in states(store, "c-1")}
    assert reasons == {
        f"vault-only: cannot verify the manifest yet: no trust source for local key "
        f"{signer.keyid} on this runner — configure FIOLAKE_TRUSTED_KEY"
    }


def test_a_key_unknown_after_a_good_refresh_is_rejected(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "lake")
    trusted = VaultLikeSigner(LocalSigner.generate(tmp_path / "t"))
    forger = VaultLikeSigner(LocalSigner.generate(tmp_path / "f"), version=7)
    publish(store, forger, "c-1")
    stats = runner(tmp_path, store, Keyring(Source(trusted)), "r1").serve()
    assert stats.rejected == 2
    assert (
        states(store, "c-1")
        == [
            (
                "rejected",
                f"manifest refused: unknown signing key {forger.keyid} (trusted: {trusted.keyid})",
            )
        ]
        * 2
    )


class LegacySigner(VaultLikeSigner):
    """Signs under a key id of the first format, `vault:<key>:v<N>` (no fingerprint)."""

    def __init__(self, key: LocalSigner):
        super().__init__(key)
        self.keyid = "vault:manifests:v1"


def test_a_key_id_without_a_fingerprint_is_rejected_even_while_vault_is_down(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "lake")
    key = LocalSigner.generate(tmp_path / "k")
    publish(store, LegacySigner(key), "c-1")
    source = Source(VaultLikeSigner(key))  # the very same key material, under its new id
    source.down = True  # no refresh could vouch for an id that names no key anyway
    stats = runner(tmp_path, store, Keyring(source), "r1").serve()
    assert stats.rejected == 2
    assert {r for _, r in states(store, "c-1")} == {
        "manifest refused: signing key id vault:manifests:v1 names no key fingerprint "
        "(signed by a fiolake before key ids were bound to keys) — re-publish the job: "
        "fiolake publish --rerun <campaign> --status rejected"
    }


class CountingStore(LocalStore):
    """A local lake that counts manifest reads (the cost of a runner's retries)."""

    manifest_gets = 0

    def get(self, key: str):  # noqa: ANN201 - as LocalStore.get
        if key.startswith(layout.JOBS_PREFIX):
            self.manifest_gets += 1
        return super().get(key)


def test_an_unjudged_job_is_not_fetched_again_until_its_back_off_ends(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "lake")
    signer = VaultLikeSigner(LocalSigner.generate(tmp_path / "k"))
    publish(store, signer, "c-1")
    source = Source(signer)
    source.down = True
    worker = runner(tmp_path, store, Keyring(source), "r1", once=False, poll_s=0.05)
    worker.config = replace(worker.config, idle_exit_s=1.0)  # ~20 scans of the lake
    assert worker.serve().jobs == 0
    assert store.manifest_gets == 2  # one look per job, then it waits (5 s, doubling)
    assert list(store.list(layout.COMMITS_PREFIX)) == []
    source.down = False
    worker.keyring = Keyring(source)  # (this keyring would wait 30 s before asking again)
    for job in campaign_status(store, "c-1"):  # the back-off is over
        worker._unjudged[job.job_id] = (0.0, service.UNJUDGED_FIRST_S)
    worker.config = replace(worker.config, once=True)
    assert worker.serve().ok == 2


def test_rerun_publishes_linked_attempts_and_keeps_history(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    store = LocalStore(lake)
    key = tmp_path / "signing.key"
    signer = LocalSigner.generate(key)
    # psync, not null: the null engine writes nothing, so size caps do not apply to it
    publish(store, signer, "c-1", JOB.replace("ioengine=null", "ioengine=psync"))
    keyring = Keyring()
    keyring.add(signer.keyid, signer.public_key_bytes(), persist=False)
    tight = Caps(max_size_bytes=2**10)  # this runner refuses the 1 MiB job file
    assert runner(tmp_path, store, keyring, "strict", caps=tight).serve().rejected == 2
    env = {"FIOLAKE_SIGNER": "local", "FIOLAKE_SIGNING_KEY": str(key)}
    res = CliRunner().invoke(
        cli, ["status", "--campaign", "c-1", "--lake", str(lake), "--format", "json"], env=env
    )
    assert res.exit_code == 0, res.output
    assert {r["state"] for r in json.loads(res.stdout)} == {"rejected"}
    assert "re-run them: fiolake publish --rerun c-1 [--status ...]" in res.stderr

    res = CliRunner().invoke(
        cli, ["publish", "--rerun", "c-1", "--status", "failed", "--lake", str(lake)], env=env
    )
    assert res.exit_code == 2
    assert "Error: campaign c-1 has no failed jobs to re-run — see `fiolake status" in res.stderr
    res = CliRunner().invoke(
        cli, ["publish", "--rerun", "c-1", "--status", "rejected", "--lake", str(lake)], env=env
    )
    assert res.exit_code == 0, res.output
    new = res.stdout.strip()
    assert new != "c-1" and "published 2 re-run job(s) of campaign c-1 (rejected)" in res.stderr
    keys = [j.key for j in campaign_status(store, new)]
    links = {manifest_in_envelope(store.get(k)[0]).rerun_of for k in keys}
    assert links == {j.job_id for j in campaign_status(store, "c-1")}
    assert runner(tmp_path, store, keyring, "relaxed").serve().ok == 2
    assert [s for s, _ in states(store, new)] == ["ok", "ok"]
    assert [s for s, _ in states(store, "c-1")] == ["rejected", "rejected"]  # history kept

    res = CliRunner().invoke(
        cli, ["status", "--recent", "5", "--lake", str(lake), "--format", "json"], env=env
    )
    assert res.exit_code == 0, res.output
    overview = [
        (r["campaign_id"], r["jobs"], r["ok"], r["rejected"], r["top_reason"])
        for r in json.loads(res.stdout)
    ]
    assert overview == [
        (new, 2, 2, 0, None),  # newest first
        (
            "c-1",
            2,
            0,
            2,
            "2 rejected: job file refused: n: [n] size=1M: above the cap of 1.0 KiB "
            "(raise it with --max-size)",
        ),
    ]


def test_rerun_usage_errors(tmp_path: Path) -> None:
    lake = str(tmp_path / "lake")
    cases = [
        (["publish", "--rerun", "c-1", "random-reads"], "--rerun takes no job files"),
        (["publish", "--status", "failed", "random-reads", "--backend", "b"], "add --rerun"),
        (["publish", "random-reads"], "Missing option '--backend' (or --rerun CAMPAIGN)."),
        (["status", "--campaign", "c-1", "--recent", "2"], "--campaign and --recent exclude"),
        (["status"], "Missing option '--campaign'. (Or --recent N for a line per recent"),
        (["status", "--recent", "0"], "Invalid value for '--recent'"),
    ]
    for argv, message in cases:
        res = CliRunner().invoke(cli, [*argv, "--lake", lake])
        assert res.exit_code == 2, argv
        assert message in res.stderr, (argv, res.stderr)
    assert not (tmp_path / "lake").exists()


def test_a_published_expectation_leaves_the_job_to_a_runner_on_that_storage(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "lake")
    _, keyring = publish_signed(store, tmp_path / "k", "c-1", job=JOB, expect_fs="tmpfs")
    on_disk = runner(tmp_path, store, keyring, "disk")  # tmp_path is not on tmpfs here
    assert on_disk.serve().ok == 0
    [(state, reason)] = states(store, "c-1")
    assert state == "pending"
    assert reason.startswith("disk: not run here: --dir ")
    assert "expected file system tmpfs" in reason
    shm = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        on_shm = runner(tmp_path, store, keyring, "shm", target_dir=shm)
        assert on_shm.serve().ok == 1
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    assert states(store, "c-1")[0][0] == "ok"
