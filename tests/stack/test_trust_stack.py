"""Trust on the real stack: a rotation mid-campaign rejects nothing, a runner that cannot
reach Vault leaves its jobs waiting (and says why where `fiolake status` reads it), a key
unknown after a good refresh is rejected, and `publish --rerun` recovers a campaign.

Runners run in-process with the runner role's MinIO keys and OpenBao token, publishers
with the publisher's: every write goes through the least-privilege policies.
"""

from __future__ import annotations

import json
import secrets
import uuid
from datetime import timedelta
from pathlib import Path

import hvac
import pytest
from click.testing import CliRunner

from fiolake import layout
from fiolake.campaign_progress import campaign_status
from fiolake.campaigns import plan_campaign, publish_manifests, store_bucket
from fiolake.cli import cli
from fiolake.config import Settings
from fiolake.manifest import manifest_in_envelope, sign_manifests
from fiolake.runner.distributed.config import RunnerConfig
from fiolake.runner.distributed.service import Runner
from fiolake.runner.policy.checks import Caps
from fiolake.signing import VaultSigner
from fiolake.stack.env import StackEnv
from fiolake.stack.process import free_ports

pytestmark = pytest.mark.stack

JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"


def _env(stack: StackEnv, role: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    # A private keyring cache (never the user's ~/.cache/fiolake) and a private lake prefix:
    # other tests leave objects under jobs/ of the shared bucket, which a runner would judge.
    return {
        **stack.environ(role),
        "FIOLAKE_LAKE": f"{stack.lake.rstrip('/')}/{tmp_path.name}",
        "FIOLAKE_KEYRING": str(tmp_path / "keyring.json"),
        **extra,
    }


def _settings(stack: StackEnv, role: str, tmp_path: Path, **extra: str) -> Settings:
    return Settings.from_env(_env(stack, role, tmp_path, **extra))


def _runner(settings: Settings, backend: str, tmp_path: Path, name: str, **cfg: object) -> Runner:
    target = tmp_path / "target"
    target.mkdir(exist_ok=True)
    config = RunnerConfig(
        backend=backend,
        target_dir=target,
        runner_id=name,
        spool_dir=tmp_path / f"spool-{name}",
        once=True,
        **cfg,  # type: ignore[arg-type]
    )
    store = settings.store()
    return Runner(store, settings.keyring(), config, store_bucket(store))


def _plan(store: object, backend: str, campaign: str, repeat: int, job: str = JOB) -> list:
    return plan_campaign(
        [("n", job)],
        [backend],
        campaign_id=campaign,
        repeat=repeat,
        runtime_s=None,
        size_bytes=None,
        bucket=store_bucket(store),  # type: ignore[arg-type]
        expires_in=timedelta(hours=1),
    )


def _ids() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"b{tag}", f"c-{tag}"


@pytest.fixture
def own_key(stack: StackEnv):  # noqa: ANN201
    """A transit key of this test's own (rotating the shared one would disturb other
    tests), with a sign token and a read-only token scoped to it, as the roles have."""
    root = hvac.Client(url=stack.vault_addr, token=stack.root_token, verify=str(stack.vault_cacert))
    name = f"trust-{secrets.token_hex(4)}"
    root.secrets.transit.create_key(name, key_type="ed25519")
    policies = {
        "sign": f'path "transit/sign/{name}" {{ capabilities = ["update"] }}\n'
        f'path "transit/keys/{name}" {{ capabilities = ["read"] }}',
        "read": f'path "transit/keys/{name}" {{ capabilities = ["read"] }}',
    }
    tokens = {}
    for role, hcl in policies.items():
        root.sys.create_or_update_policy(f"{name}-{role}", hcl)
        auth = root.auth.token.create(policies=[f"{name}-{role}"], ttl="10m")["auth"]
        tokens[role] = auth["client_token"]
    try:
        yield root, name, tokens
    finally:
        for role in policies:
            root.sys.delete_policy(f"{name}-{role}")


def test_rotating_the_transit_key_mid_campaign_rejects_nothing(
    stack: StackEnv, own_key, tmp_path: Path
) -> None:  # noqa: ANN001
    root, name, tokens = own_key
    backend, campaign = _ids()
    publisher = _settings(stack, "publisher", tmp_path).store()
    signer = VaultSigner(stack.vault_addr, tokens["sign"], name, stack.vault_cacert)
    manifests = _plan(publisher, backend, campaign, repeat=6)
    # The first half goes out signed with v1 ...
    for m, envelope in zip(manifests[:3], sign_manifests(manifests[:3], signer), strict=True):
        publisher.put(m.key, envelope, if_none_match=True)
    runner_settings = _settings(
        stack, "runner", tmp_path, VAULT_TOKEN=tokens["read"], FIOLAKE_TRANSIT_KEY=name
    )
    worker = _runner(runner_settings, backend, tmp_path, "r1", max_jobs=2)
    assert worker.serve().ok == 2  # v1 is now in memory and in the cache
    # ... the key is rotated while the campaign runs, and the rest is signed with v2.
    root.secrets.transit.rotate_key(name)
    for m, envelope in zip(manifests[3:], sign_manifests(manifests[3:], signer), strict=True):
        publisher.put(m.key, envelope, if_none_match=True)
    keyids = {json.loads(publisher.get(m.key)[0])["signatures"][0]["keyid"] for m in manifests}
    assert sorted(k.split(":")[2] for k in keyids) == ["v1", "v2"]
    worker.config = RunnerConfig(**{**worker.config.__dict__, "max_jobs": None})
    worker.serve()
    restarted = _runner(runner_settings, backend, tmp_path, "r2")  # from the cache file
    restarted.serve()
    assert [j.state for j in campaign_status(publisher, campaign)] == ["ok"] * 6
    assert (worker.stats.rejected, restarted.stats.rejected) == (0, 0)
    cached = json.loads((tmp_path / "keyring.json").read_text())["sources"]
    assert sorted(cached[f"vault {stack.vault_addr} transit/keys/{name}"]["keys"]) == sorted(keyids)


def test_vault_unreachable_leaves_jobs_waiting_with_the_reason(
    stack: StackEnv, tmp_path: Path
) -> None:
    backend, campaign = _ids()
    publisher = _settings(stack, "publisher", tmp_path)
    store = publisher.store()
    publish_manifests(store, _plan(store, backend, campaign, repeat=2), publisher.signer())
    nowhere = f"https://127.0.0.1:{free_ports(1)[0]}"  # nothing listens there
    cut_off = _settings(stack, "runner", tmp_path, VAULT_ADDR=nowhere)
    stats = _runner(cut_off, backend, tmp_path, "cut-off").serve()
    assert (stats.ok, stats.rejected) == (0, 0)
    assert [j.state for j in campaign_status(store, campaign)] == ["pending"] * 2
    res = CliRunner().invoke(
        cli,
        ["status", "--campaign", campaign, "--format", "json"],
        env=_env(stack, "analyst", tmp_path),
    )
    assert res.exit_code == 0, res.output
    for row in json.loads(res.stdout):
        assert row["state"] == "pending"
        assert row["reason"].startswith(
            "cut-off: cannot verify the manifest yet: cannot refresh signing keys: "
            f"cannot reach Vault at {nowhere} to read transit key 'manifests'"
        )
    assert "2 pending: cut-off: cannot verify the manifest yet" in res.stderr
    # The runner wrote nothing but its notes: no commit, no claim.
    admin = _settings(stack, "admin", tmp_path).store()
    for job in campaign_status(store, campaign):
        assert admin.head(layout.commit_key(job.job_id)) is None
        assert admin.head(layout.claim_key(job.job_id)) is None
    # Once Vault is in reach, the same jobs run and commit.
    reachable = _settings(stack, "runner", tmp_path)
    assert _runner(reachable, backend, tmp_path, "in-reach").serve().ok == 2
    assert [j.state for j in campaign_status(store, campaign)] == ["ok"] * 2


def test_a_key_unknown_after_a_good_refresh_is_rejected(
    stack: StackEnv, own_key, tmp_path: Path
) -> None:  # noqa: ANN001
    _, name, tokens = own_key
    backend, campaign = _ids()
    store = _settings(stack, "publisher", tmp_path).store()
    stranger = VaultSigner(stack.vault_addr, tokens["sign"], name, stack.vault_cacert)
    publish_manifests(store, _plan(store, backend, campaign, repeat=1), stranger)
    runner = _settings(stack, "runner", tmp_path)  # trusts transit/keys/manifests only
    assert _runner(runner, backend, tmp_path, "r1").serve().rejected == 1
    [job] = campaign_status(store, campaign)
    assert job.state == "rejected"
    assert job.reason is not None
    assert job.reason.startswith(f"manifest refused: unknown signing key vault:{name}:v1:")


def test_rerun_recovers_a_campaign_through_the_cli(stack: StackEnv, tmp_path: Path) -> None:
    backend, campaign = _ids()
    publisher = _settings(stack, "publisher", tmp_path)
    store = publisher.store()
    job = JOB.replace("ioengine=null", "ioengine=psync")  # null jobs have no size caps
    publish_manifests(store, _plan(store, backend, campaign, 2, job), publisher.signer())
    runner = _settings(stack, "runner", tmp_path)
    strict = _runner(runner, backend, tmp_path, "strict", caps=Caps(max_size_bytes=2**10))
    assert strict.serve().rejected == 2

    env = _env(stack, "publisher", tmp_path)
    res = CliRunner().invoke(cli, ["publish", "--rerun", campaign, "--status", "rejected"], env=env)
    assert res.exit_code == 0, res.output
    new = res.stdout.strip()
    assert new != campaign
    links = {
        manifest_in_envelope(store.get(j.key)[0]).rerun_of for j in campaign_status(store, new)
    }
    assert links == {j.job_id for j in campaign_status(store, campaign)}
    assert _runner(runner, backend, tmp_path, "relaxed").serve().ok == 2
    res = CliRunner().invoke(cli, ["status", "--campaign", new], env=env)
    assert res.exit_code == 0 and "2 ok" in res.stderr
    assert {j.state for j in campaign_status(store, campaign)} == {"rejected"}  # history kept
