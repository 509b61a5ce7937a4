"""Set up OpenBao and MinIO that run elsewhere (compose services, other hosts).

The `init` service of compose.yaml runs this through `fiolake stack init-remote`; it
writes everything the other services need into one shared directory:

    openbao/bao.hcl, openbao/tls/   OpenBao's config and bootstrap TLS (read by `openbao`)
    secrets/bao-init.json           unseal key + root token (0600)
    secrets/minio-root.env          MinIO root user (0600, sourced by `minio`)
    minio-certs/                    MinIO's server cert from OpenBao PKI (read by `minio`)
    ca.crt                          CA bundle every client trusts
    env/<role>.env                  `export …` lines per role (0600, sourced by runner/app)
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fiolake.stack import iam, minio, openbao
from fiolake.stack.bootstrap_tls import cert_expires_within, ensure_bootstrap_tls
from fiolake.stack.env import RoleCredentials, StackEnv
from fiolake.stack.process import wait_for, write_private
from fiolake.stack.roles import SERVICE_ROLES
from fiolake.stack.service_errors import service_errors

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemoteTopology:
    """Where the services are and what names their certificates carry."""

    bao_addr: str = "https://openbao:8200"
    bao_listen: str = "0.0.0.0:8200"
    bao_cluster_listen: str = "0.0.0.0:8201"
    bao_data_dir: Path = Path("/bao/data")
    bao_names: list[str] = field(default_factory=lambda: ["openbao", "localhost", "127.0.0.1"])
    minio_endpoint: str = "https://minio:9000"
    minio_names: list[str] = field(default_factory=lambda: ["minio", "localhost", "127.0.0.1"])
    bucket: str = "fiolake"
    timeout_s: float = 180.0


def _wait(check: Callable[[], bool], what: str, timeout_s: float) -> None:
    wait_for(check, timeout_s=timeout_s, what=what)


def _minio_root(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            name, _, value = line.partition("=")
            values[name.strip()] = shlex.split(value)[0] if value.strip() else ""
    if not values.get("MINIO_ROOT_USER") or not values.get("MINIO_ROOT_PASSWORD"):
        values = {
            "MINIO_ROOT_USER": "fiolake-admin",
            "MINIO_ROOT_PASSWORD": secrets.token_urlsafe(30),
        }
        write_private(path, "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items()))
    return {"user": values["MINIO_ROOT_USER"], "password": values["MINIO_ROOT_PASSWORD"]}


def init_remote(out: Path, topo: RemoteTopology) -> StackEnv:
    """Bootstrap TLS, init/unseal/configure OpenBao, issue MinIO's cert, set up IAM; idempotent."""
    with service_errors(None, None):
        return _init_remote(out, topo)


def _init_remote(out: Path, topo: RemoteTopology) -> StackEnv:
    """`init_remote` step by step, each service set up before the next one needs it."""
    out.mkdir(parents=True, exist_ok=True)
    bao_dir, sec = out / "openbao", out / "secrets"
    sec.mkdir(mode=0o700, exist_ok=True)
    bootstrap_ca = _write_openbao_config(bao_dir, topo)
    root = _minio_root(sec / "minio-root.env")
    root_token = _set_up_openbao(topo, bootstrap_ca, sec / "bao-init.json")
    ca = _write_ca_bundle(out / "ca.crt", topo, bootstrap_ca, root_token)
    _issue_minio_cert(out / "minio-certs", topo, bootstrap_ca, root_token)
    log.info("waiting for MinIO at %s", topo.minio_endpoint)
    _wait(lambda: minio.ready(topo.minio_endpoint, ca), "MinIO", topo.timeout_s)
    roles = _set_up_minio_users(topo, ca, root_token, root)
    env = StackEnv(
        state_dir=out,
        endpoint=topo.minio_endpoint,
        ca_bundle=ca,
        bucket=topo.bucket,
        lake=f"s3://{topo.bucket}",
        vault_addr=topo.bao_addr,
        vault_cacert=ca,
        root_token=root_token,
        transit_key=openbao.TRANSIT_KEY,
        roles=roles,
    )
    for role in roles:
        lines = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.environ(role).items())
        write_private(out / "env" / f"{role}.env", lines)
    return env


def _write_openbao_config(bao_dir: Path, topo: RemoteTopology) -> Path:
    """Write OpenBao's bootstrap TLS and bao.hcl (listening per `topo`); the bootstrap
    CA certificate, which clients trust until OpenBao's own PKI exists."""
    bootstrap_ca, cert, key = ensure_bootstrap_tls(bao_dir / "tls", topo.bao_names)
    host = topo.bao_addr.split("://", 1)[1].rsplit(":", 1)[0]
    cluster_port = topo.bao_cluster_listen.rsplit(":", 1)[1]
    (bao_dir / "bao.hcl").write_text(
        openbao.server_config(
            address=topo.bao_listen,
            cluster_address=topo.bao_cluster_listen,
            data_dir=topo.bao_data_dir,
            cert=cert,
            key=key,
            api_addr=topo.bao_addr,
            cluster_addr=f"https://{host}:{cluster_port}",
        )
    )
    return bootstrap_ca


def _set_up_openbao(topo: RemoteTopology, bootstrap_ca: Path, init_file: Path) -> str:
    """Wait for OpenBao, init and unseal it (keys kept in `init_file`), configure PKI,
    policies and roles; the root token."""
    log.info("waiting for OpenBao at %s", topo.bao_addr)
    _wait(
        lambda: openbao.health(topo.bao_addr, bootstrap_ca) is not None, "OpenBao", topo.timeout_s
    )
    root_token = openbao.init_and_unseal(topo.bao_addr, bootstrap_ca, init_file)
    openbao.configure(
        topo.bao_addr,
        bootstrap_ca,
        root_token,
        server_names=topo.minio_names,
        policies=openbao.policy_dir(),
    )
    return root_token


def _write_ca_bundle(ca: Path, topo: RemoteTopology, bootstrap_ca: Path, root_token: str) -> Path:
    """Write the CA bundle every client trusts: OpenBao's PKI CA, then the bootstrap CA."""
    ca.write_text(
        openbao.pki_ca_pem(topo.bao_addr, bootstrap_ca, root_token) + bootstrap_ca.read_text()
    )
    return ca


def _issue_minio_cert(
    certs: Path, topo: RemoteTopology, bootstrap_ca: Path, root_token: str
) -> None:
    """Issue MinIO's server certificate from OpenBao's PKI into `certs` when there is
    none or it expires within 30 days."""
    if cert_expires_within(certs / "public.crt", dt.timedelta(days=30)):
        chain, server_key = openbao.issue_server_cert(
            topo.bao_addr, bootstrap_ca, root_token, names=topo.minio_names
        )
        certs.mkdir(exist_ok=True)
        write_private(certs / "private.key", server_key)
        (certs / "public.crt").write_text(chain)


def _set_up_minio_users(
    topo: RemoteTopology, ca: Path, root_token: str, root: dict[str, str]
) -> dict[str, RoleCredentials]:
    """Each service role's MinIO keys (kept in OpenBao; made once), the bucket and the
    MinIO users with their policies; per role its keys and an AppRole token, admin the
    MinIO root user with the root token."""
    creds: dict[str, dict[str, str]] = {}
    for role in SERVICE_ROLES:
        creds[role] = openbao.get_role_secret(topo.bao_addr, ca, root_token, role) or {}
        if not creds[role]:
            creds[role] = iam.new_credentials(role)
            openbao.put_role_secret(topo.bao_addr, ca, root_token, role, creds[role])
    iam.ensure_bucket(topo.minio_endpoint, ca, root["user"], root["password"], topo.bucket)
    iam.ensure_users(
        topo.minio_endpoint,
        ca,
        root["user"],
        root["password"],
        bucket=topo.bucket,
        policies=openbao.policy_dir(),
        credentials=creds,
    )
    roles = {"admin": RoleCredentials(root["user"], root["password"], root_token)}
    for role in SERVICE_ROLES:
        token = openbao.approle_token(topo.bao_addr, ca, root_token, role)
        roles[role] = RoleCredentials(creds[role]["access_key"], creds[role]["secret_key"], token)
    return roles
