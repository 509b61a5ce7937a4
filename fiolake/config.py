"""Settings read from the environment (FIOLAKE_*, AWS_*, VAULT_*) in one place."""

from __future__ import annotations

import os
from collections.abc import Mapping

from fiolake.store import ObjectStore, S3Settings, open_store

DEFAULT_LAKE = "./lake"


def lake_url(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The lake to use: the option, else FIOLAKE_LAKE, else ./lake."""
    env = os.environ if env is None else env
    return explicit or env.get("FIOLAKE_LAKE") or DEFAULT_LAKE


def s3_settings(env: Mapping[str, str] | None = None) -> S3Settings | None:
    """S3 settings from FIOLAKE_S3_ENDPOINT, FIOLAKE_CA_BUNDLE and AWS_* (None if no endpoint)."""
    env = os.environ if env is None else env
    endpoint = env.get("FIOLAKE_S3_ENDPOINT")
    if not endpoint:
        return None
    return S3Settings(
        endpoint=endpoint,
        ca_bundle=env.get("FIOLAKE_CA_BUNDLE") or env.get("AWS_CA_BUNDLE") or None,
        access_key=env.get("AWS_ACCESS_KEY_ID"),
        secret_key=env.get("AWS_SECRET_ACCESS_KEY"),
        region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
    )


def lake_store(explicit: str | None = None, env: Mapping[str, str] | None = None) -> ObjectStore:
    """Open the configured lake (local directory or S3)."""
    return open_store(lake_url(explicit, env), s3_settings(env))
