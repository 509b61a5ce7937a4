"""What in-process runner tests start from: a campaign of one job file on backend "b",
published with a fresh local key, and a keyring that trusts that key."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from fiolake.campaigns import plan_campaign, publish_manifests
from fiolake.manifest import Manifest
from fiolake.signing import Keyring, LocalSigner
from fiolake.store import ObjectStore

NULL_JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"


def publish_signed(
    store: ObjectStore,
    key_path: Path,
    campaign_id: str,
    *,
    job: str = NULL_JOB,
    repeat: int = 1,
    **plan: Any,
) -> tuple[list[Manifest], Keyring]:
    """Publish `job` `repeat` times (plan_campaign's other options in `plan`); the
    manifests and a keyring holding the signer's public key."""
    signer = LocalSigner.generate(key_path)
    manifests = plan_campaign(
        [("n", job)],
        ["b"],
        campaign_id=campaign_id,
        repeat=repeat,
        runtime_s=None,
        size_bytes=None,
        bucket="",
        expires_in=timedelta(hours=1),
        **plan,
    )
    publish_manifests(store, manifests, signer)
    keyring = Keyring()
    keyring.add(signer.keyid, signer.public_key_bytes(), persist=False)
    return manifests, keyring
