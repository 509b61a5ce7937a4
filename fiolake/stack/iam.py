"""MinIO bucket and least-privilege users (runner, publisher, analyst), via minio-py."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import urllib3
from minio import Minio, MinioAdmin
from minio.commonconfig import ENABLED
from minio.credentials import StaticProvider
from minio.versioningconfig import VersioningConfig

from fiolake.errors import FiolakeError
from fiolake.stack.roles import SERVICE_ROLES


def _http(ca: Path):  # noqa: ANN202 - urllib3.PoolManager
    return urllib3.PoolManager(
        cert_reqs="CERT_REQUIRED",
        ca_certs=str(ca),
        timeout=urllib3.Timeout(connect=5, read=15),
        retries=urllib3.Retry(total=3, backoff_factor=0.2),
    )


def _hostport(endpoint: str) -> str:
    if not endpoint.startswith("https://"):
        raise FiolakeError(f"MinIO endpoint {endpoint!r} must be https://")
    return endpoint[len("https://") :].rstrip("/")


def load_policy(policies: Path, role: str, bucket: str) -> dict:
    """The IAM policy of `role` with `${BUCKET}` replaced by the bucket name."""
    text = (policies / f"minio-{role}.json").read_text()
    return json.loads(text.replace("${BUCKET}", bucket))


def new_credentials(role: str) -> dict[str, str]:
    """A fresh access key (readable, prefixed by the role) and a random secret key."""
    return {
        "access_key": f"fiolake-{role}-{secrets.token_hex(4)}",
        "secret_key": secrets.token_urlsafe(30),
    }


def ensure_bucket(endpoint: str, ca: Path, root_user: str, root_password: str, bucket: str) -> None:
    """Create `bucket` if needed and switch versioning on (keeps history of overwrites)."""

    mc = Minio(
        _hostport(endpoint),
        access_key=root_user,
        secret_key=root_password,
        secure=True,
        http_client=_http(ca),
    )
    if not mc.bucket_exists(bucket):
        mc.make_bucket(bucket)
    if mc.get_bucket_versioning(bucket).status != ENABLED:
        mc.set_bucket_versioning(bucket, VersioningConfig(ENABLED))


def ensure_users(
    endpoint: str,
    ca: Path,
    root_user: str,
    root_password: str,
    *,
    bucket: str,
    policies: Path,
    credentials: dict[str, dict[str, str]],
) -> None:
    """Install the role policies and create/refresh one user per role with its policy."""

    admin = MinioAdmin(
        endpoint=_hostport(endpoint),
        credentials=StaticProvider(root_user, root_password),
        secure=True,
        http_client=_http(ca),
    )
    for role in SERVICE_ROLES:
        name = f"fiolake-{role}"
        admin.policy_add(name, policy=load_policy(policies, role, bucket))
        creds = credentials[role]
        admin.user_add(creds["access_key"], creds["secret_key"])
        admin.policy_set(name, user=creds["access_key"])
