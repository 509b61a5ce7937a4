"""A flood of tampered manifests is no Vault load amplifier: at most one key refresh per
key id per minute, whatever the cause, against the real OpenBao.

A real runner (in process, real fio's null engine never starts: every manifest is
refused) judges 100 manifests signed by the stack's Vault transit key and then tampered:
50 with a payload changed after signing (a bad signature under the real, cached key id)
and 50 naming one made-up key id. Every one is committed `rejected`; the runner's Vault
client answers for at most two reads (one per key id), counted on the HTTP responses
OpenBao sent it.
"""

from __future__ import annotations

import base64
import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
import requests

from fiolake import layout
from fiolake.campaign_progress import campaign_status
from fiolake.campaigns import plan_campaign
from fiolake.config import Settings
from fiolake.manifest import sign_manifests
from fiolake.runner.distributed.config import RunnerConfig
from fiolake.runner.distributed.service import Runner
from fiolake.signing import vault_keyid
from fiolake.signing.vault import VaultKeySource
from fiolake.store import LocalStore

pytestmark = pytest.mark.stack
JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"
TAMPERED = 100
# Made up, of the current format (it names a fingerprint, so only Vault can refuse it).
BOGUS = vault_keyid("manifests", 99, os.urandom(32))


def _tamper(envelope: bytes, i: int) -> bytes:
    doc = json.loads(envelope)
    if i % 2:
        doc["signatures"][0]["keyid"] = BOGUS
    else:  # the payload changed after signing: bad signature under the real key id
        payload = json.loads(base64.b64decode(doc["payload"]))
        payload["runtime_s"] = 3600
        doc["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
    return json.dumps(doc).encode()


def test_100_tampered_manifests_cost_at_most_two_vault_reads(stack, tmp_path: Path) -> None:  # noqa: ANN001
    store = LocalStore(tmp_path / "lake")
    manifests = plan_campaign(
        [("n", JOB)],
        ["b"],
        campaign_id="c-flood",
        repeat=TAMPERED,
        runtime_s=None,
        size_bytes=None,
        bucket="",
        expires_in=timedelta(hours=1),
    )
    signer = Settings.from_env(stack.environ("publisher")).signer()
    envelopes = sign_manifests(manifests, signer)
    for i, (m, envelope) in enumerate(zip(manifests, envelopes, strict=True)):
        store.put(m.key, _tamper(envelope, i), if_none_match=True)
    runner_env = {**stack.environ("runner"), "FIOLAKE_KEYRING": str(tmp_path / "keyring.json")}
    keyring = Settings.from_env(runner_env).keyring()
    keyring.refresh()  # a runner that has its keys already (its cache is fresh)
    reads: list[str] = []

    def count(response: requests.Response, *args: object, **kwargs: object) -> None:
        reads.append(f"{response.request.method} {response.url}")

    source = keyring.refresher
    assert isinstance(source, VaultKeySource)
    source._client.adapter.session.hooks["response"].append(count)
    (tmp_path / "t").mkdir()
    config = RunnerConfig(
        backend="b", target_dir=tmp_path / "t", runner_id="r1", spool_dir=tmp_path / "s", once=True
    )
    Runner(store, keyring, config, bucket="").serve()
    jobs = campaign_status(store, "c-flood")
    assert [j.state for j in jobs] == ["rejected"] * TAMPERED
    reasons = {(j.reason or "").split(" (", 1)[0] for j in jobs}
    refused = "manifest refused:"
    assert reasons == {f"{refused} bad signature", f"{refused} unknown signing key {BOGUS}"}
    assert 1 <= len(reads) <= 2, reads
    assert all(r.startswith("GET ") and "/transit/keys/" in r for r in reads), reads
    assert layout.commit_key(jobs[0].job_id) in set(store.list(layout.COMMITS_PREFIX))
