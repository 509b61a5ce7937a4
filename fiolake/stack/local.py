"""The single-machine stack: OpenBao and MinIO as background processes of one state dir.

State layout (everything below `state_dir`, secrets 0600):

    stack.json            ports and bucket of the last `stack up`
    secrets/bao-init.json unseal key + root token    secrets/minio-root.json root user
    tls/                  bootstrap CA + OpenBao listener cert
    ca.crt                CA bundle: OpenBao PKI root (MinIO) + bootstrap CA (OpenBao)
    bao.hcl bao-data/ bao.log bao.pid       minio-certs/ minio-data/ minio.log minio.pid
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
import shutil
import signal
from pathlib import Path

from fiolake.config import Settings
from fiolake.errors import FiolakeError, UsageProblem
from fiolake.stack import iam, minio, openbao
from fiolake.stack.bootstrap_tls import cert_expires_within, ensure_bootstrap_tls
from fiolake.stack.env import RoleCredentials, StackEnv
from fiolake.stack.ports import choose_ports
from fiolake.stack.process import (
    log_tail,
    read_json,
    require_free_port,
    running_pid,
    start_process,
    stop_process,
    wait_for,
    write_private,
    write_private_json,
)
from fiolake.stack.roles import SERVICE_ROLES
from fiolake.stack.service_errors import service_errors

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
SERVER_NAMES = [HOST, "localhost"]
START_TIMEOUT_S = 60.0
NOT_RUNNING = "stack is not running: run `fiolake stack up`"
# The ports a first `stack up` tries; any that is taken is replaced by a free one.


def default_state_dir() -> Path:
    """FIOLAKE_STATE_DIR, else ~/.local/state/fiolake."""
    return Settings.from_env().state_dir or Path.home() / ".local" / "state" / "fiolake"


class _Paths:
    def __init__(self, root: Path):
        self.root = Path(root).absolute()
        self.config = self.root / "stack.json"
        self.secrets = self.root / "secrets"
        self.bao_init = self.secrets / "bao-init.json"
        self.minio_root = self.secrets / "minio-root.json"
        self.tls = self.root / "tls"
        self.ca = self.root / "ca.crt"
        self.bao_hcl, self.bao_data = self.root / "bao.hcl", self.root / "bao-data"
        self.bao_log, self.bao_pid = self.root / "bao.log", self.root / "bao.pid"
        self.minio_certs, self.minio_data = self.root / "minio-certs", self.root / "minio-data"
        self.minio_log, self.minio_pid = self.root / "minio.log", self.root / "minio.pid"


def _bao_addr(port: int) -> str:
    return f"https://{HOST}:{port}"


def _endpoint(port: int) -> str:
    return f"https://{HOST}:{port}"


def _minio_ports(paths: _Paths) -> list[int]:
    config = read_json(paths.config) or {}
    return [config[k] for k in ("minio_port", "console_port") if k in config]


def _bao_ports(paths: _Paths) -> list[int]:
    config = read_json(paths.config) or {}
    return [config[k] for k in ("bao_port", "bao_cluster_port") if k in config]


def _config(paths: _Paths) -> dict:
    config = read_json(paths.config)
    if config is None:
        raise FiolakeError(NOT_RUNNING)
    return config


# ---------------------------------------------------------------- OpenBao


def _start_openbao(paths: _Paths, config: dict) -> str:
    """Start (if needed) and unseal OpenBao; the root token."""
    bootstrap_ca, cert, key = ensure_bootstrap_tls(paths.tls, SERVER_NAMES)
    port, cluster_port = config["bao_port"], config["bao_cluster_port"]
    addr = _bao_addr(port)
    pid = running_pid(paths.bao_pid, "bao")
    if pid is None:
        require_free_port(port, "OpenBao", "--bao-port")
        require_free_port(cluster_port, "OpenBao's cluster listener", "--bao-cluster-port")
        paths.bao_data.mkdir(mode=0o700, exist_ok=True)
        paths.bao_hcl.write_text(
            openbao.server_config(
                address=f"{HOST}:{port}",
                cluster_address=f"{HOST}:{cluster_port}",
                data_dir=paths.bao_data,
                cert=cert,
                key=key,
                api_addr=addr,
                cluster_addr=f"https://{HOST}:{cluster_port}",
            )
        )
        binary = openbao.bao_binary()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(paths.root)}
        log.info("starting OpenBao on %s", addr)
        pid = start_process(
            [str(binary), "server", f"-config={paths.bao_hcl}"],
            env=env,
            log_path=paths.bao_log,
            pid_path=paths.bao_pid,
        )
    wait_for(
        lambda: openbao.health(addr, bootstrap_ca) is not None,
        timeout_s=START_TIMEOUT_S,
        what=f"OpenBao ({addr})",
        log_path=paths.bao_log,
        pid=pid,
    )
    return openbao.init_and_unseal(addr, bootstrap_ca, paths.bao_init)


# ---------------------------------------------------------------- MinIO


def _minio_root(paths: _Paths) -> dict[str, str]:
    saved = read_json(paths.minio_root)
    if saved is None:
        saved = {"user": "fiolake-admin", "password": secrets.token_urlsafe(30)}
        write_private_json(paths.minio_root, saved)
    return saved


def _ensure_minio_cert(paths: _Paths, bao_addr: str, root_token: str) -> bool:
    """Issue MinIO's server certificate from OpenBao PKI when missing or near expiry."""
    crt = paths.minio_certs / "public.crt"
    if not cert_expires_within(crt, dt.timedelta(days=30)):
        return False
    chain, key = openbao.issue_server_cert(
        bao_addr, paths.tls / "bootstrap-ca.crt", root_token, names=SERVER_NAMES
    )
    paths.minio_certs.mkdir(mode=0o700, exist_ok=True)
    write_private(paths.minio_certs / "private.key", key)
    crt.write_text(chain)
    return True


def _launch_minio(paths: _Paths, config: dict) -> int:
    require_free_port(config["minio_port"], "MinIO", "--minio-port")
    require_free_port(config["console_port"], "the MinIO console", "--console-port")
    root = _minio_root(paths)
    paths.minio_data.mkdir(mode=0o700, exist_ok=True)
    argv = minio.server_argv(
        minio.ensure_minio(),
        address=f"{HOST}:{config['minio_port']}",
        console_address=f"{HOST}:{config['console_port']}",
        certs_dir=paths.minio_certs,
        data_dir=paths.minio_data,
    )
    log.info("starting MinIO on %s", _endpoint(config["minio_port"]))
    return start_process(
        argv,
        env=minio.server_env(root["user"], root["password"]),
        log_path=paths.minio_log,
        pid_path=paths.minio_pid,
    )


def _wait_minio(paths: _Paths, config: dict, pid: int | None) -> None:
    endpoint = _endpoint(config["minio_port"])
    wait_for(
        lambda: minio.ready(endpoint, paths.ca),
        timeout_s=START_TIMEOUT_S,
        what=f"MinIO ({endpoint})",
        log_path=paths.minio_log,
        pid=pid,
    )


def start_minio(state_dir: Path) -> None:
    """Start MinIO again on its recorded port (fault injection); no-op if it runs."""
    paths = _Paths(state_dir)
    config = _config(paths)
    pid = running_pid(paths.minio_pid, "minio")
    if pid is None:
        pid = _launch_minio(paths, config)
    _wait_minio(paths, config, pid)


def stop_minio(state_dir: Path, *, kill: bool = True) -> None:
    """Stop MinIO only: SIGKILL by default (a crash), SIGTERM with `kill=False`."""
    paths = _Paths(state_dir)
    stop_process(paths.minio_pid, "minio", grace_s=0 if kill else 10, ports=_minio_ports(paths))


def restart_minio(state_dir: Path) -> None:
    """kill -9 MinIO and start it again on the same port with the same data."""
    stop_minio(state_dir, kill=True)
    start_minio(state_dir)


# ---------------------------------------------------------------- the stack


def _role_credentials(paths: _Paths, config: dict, root_token: str) -> dict[str, RoleCredentials]:
    addr, ca = _bao_addr(config["bao_port"]), paths.ca
    root = _minio_root(paths)
    roles = {"admin": RoleCredentials(root["user"], root["password"], root_token)}
    for role in SERVICE_ROLES:
        secret = openbao.get_role_secret(addr, ca, root_token, role)
        if secret is None:
            raise FiolakeError(f"no credentials for role {role} in OpenBao: run `fiolake stack up`")
        token = openbao.approle_token(addr, ca, root_token, role)
        roles[role] = RoleCredentials(secret["access_key"], secret["secret_key"], token)
    return roles


def _stack_env(paths: _Paths, config: dict, root_token: str) -> StackEnv:
    return StackEnv(
        state_dir=paths.root,
        endpoint=_endpoint(config["minio_port"]),
        ca_bundle=paths.ca,
        bucket=config["bucket"],
        lake=f"s3://{config['bucket']}",
        vault_addr=_bao_addr(config["bao_port"]),
        vault_cacert=paths.ca,
        root_token=root_token,
        transit_key=openbao.TRANSIT_KEY,
        roles=_role_credentials(paths, config, root_token),
    )


def _check_ports_match(paths: _Paths, wanted: dict) -> None:
    old = read_json(paths.config)
    running = running_pid(paths.bao_pid, "bao") or running_pid(paths.minio_pid, "minio")
    if old is None or not running:
        return
    for key in ("minio_port", "console_port", "bao_port", "bao_cluster_port", "bucket"):
        if old.get(key) != wanted[key]:
            raise UsageProblem(
                f"the stack in {paths.root} is already running with {key}={old.get(key)} "
                f"(asked for {wanted[key]}): run `fiolake stack down` first"
            )


def resolve_ports(state_dir: Path, requested: dict[str, int | None]) -> dict[str, int]:
    """The four ports for a stack in `state_dir` (see fiolake.stack.ports.choose_ports)."""
    paths = _Paths(state_dir)
    running = running_pid(paths.bao_pid, "bao") or running_pid(paths.minio_pid, "minio")
    return choose_ports(requested, read_json(paths.config) or {}, running=bool(running))


def stack_up(
    state_dir: Path,
    *,
    minio_port: int = 9900,
    bao_port: int = 8300,
    bucket: str = "fiolake",
    console_port: int | None = None,
    bao_cluster_port: int | None = None,
) -> StackEnv:
    """Start (or re-use) OpenBao and MinIO, configure PKI/transit/KV/AppRole and IAM."""
    paths = _Paths(state_dir)
    paths.root.mkdir(parents=True, exist_ok=True)
    os.chmod(paths.root, 0o700)
    paths.secrets.mkdir(mode=0o700, exist_ok=True)
    config = {
        "minio_port": minio_port,
        "console_port": console_port if console_port is not None else minio_port + 1,
        "bao_port": bao_port,
        "bao_cluster_port": bao_cluster_port if bao_cluster_port is not None else bao_port + 1,
        "bucket": bucket,
    }
    ports = [config[k] for k in ("minio_port", "console_port", "bao_port", "bao_cluster_port")]
    if len(set(ports)) != len(ports):
        raise UsageProblem(f"the four ports must differ, got {ports}")
    _check_ports_match(paths, config)
    write_private_json(paths.config, config)
    with service_errors(paths.bao_log, paths.minio_log):
        return _bring_up(paths, config)


def _bring_up(paths: _Paths, config: dict) -> StackEnv:
    bao_port, minio_port, bucket = config["bao_port"], config["minio_port"], config["bucket"]
    root_token = _start_openbao(paths, config)
    bao_addr, bootstrap_ca = _bao_addr(bao_port), paths.tls / "bootstrap-ca.crt"
    openbao.configure(
        bao_addr, bootstrap_ca, root_token, server_names=SERVER_NAMES, policies=openbao.policy_dir()
    )
    paths.ca.write_text(
        openbao.pki_ca_pem(bao_addr, bootstrap_ca, root_token) + bootstrap_ca.read_text()
    )
    renewed = _ensure_minio_cert(paths, bao_addr, root_token)
    pid = running_pid(paths.minio_pid, "minio")
    if pid is None:
        pid = _launch_minio(paths, config)
    elif renewed:
        os.kill(pid, signal.SIGHUP)  # MinIO reloads its certificate on SIGHUP
    _wait_minio(paths, config, pid)

    endpoint, root = _endpoint(minio_port), _minio_root(paths)
    creds: dict[str, dict[str, str]] = {}
    for role in SERVICE_ROLES:
        secret = openbao.get_role_secret(bao_addr, paths.ca, root_token, role)
        if secret is None:
            secret = iam.new_credentials(role)
            openbao.put_role_secret(bao_addr, paths.ca, root_token, role, secret)
        creds[role] = secret
    iam.ensure_bucket(endpoint, paths.ca, root["user"], root["password"], bucket)
    iam.ensure_users(
        endpoint,
        paths.ca,
        root["user"],
        root["password"],
        bucket=bucket,
        policies=openbao.policy_dir(),
        credentials=creds,
    )
    return _stack_env(paths, config, root_token)


def load_stack(state_dir: Path) -> StackEnv:
    """The StackEnv of a running stack; FiolakeError if it is not running."""
    paths = _Paths(state_dir)
    config = _config(paths)
    bao = running_pid(paths.bao_pid, "bao")
    mio = running_pid(paths.minio_pid, "minio")
    saved = read_json(paths.bao_init)
    if bao is None or mio is None or saved is None:
        raise FiolakeError(NOT_RUNNING)
    health = openbao.health(_bao_addr(config["bao_port"]), paths.ca)
    if health is None or health.get("sealed", True):
        raise FiolakeError(
            f"OpenBao is down or sealed: run `fiolake stack up`\n{log_tail(paths.bao_log)}"
        )
    with service_errors(paths.bao_log, paths.minio_log):
        return _stack_env(paths, config, saved["root_token"])


def stack_down(state_dir: Path, *, purge: bool = False) -> None:
    """Stop MinIO and OpenBao (SIGTERM, SIGKILL after 10 s); `purge` deletes the state dir."""
    paths = _Paths(state_dir)
    stop_process(paths.minio_pid, "minio", ports=_minio_ports(paths))
    stop_process(paths.bao_pid, "bao", ports=_bao_ports(paths))
    if purge and paths.root.exists():
        if not (paths.config.exists() or paths.bao_hcl.exists() or paths.secrets.exists()):
            raise FiolakeError(
                f"refusing to delete {paths.root}: it does not look like a fiolake state directory"
            )
        shutil.rmtree(paths.root)


def stack_status(state_dir: Path) -> list[dict]:
    """One row per component: component, pid, address, health (ok/sealed/down)."""
    paths = _Paths(state_dir)
    config = read_json(paths.config) or {}
    rows = []
    bao_pid = running_pid(paths.bao_pid, "bao")
    bao_addr = _bao_addr(config["bao_port"]) if "bao_port" in config else None
    bao_health = "down"
    if bao_pid is not None and bao_addr is not None:
        ca = paths.ca if paths.ca.exists() else paths.tls / "bootstrap-ca.crt"
        health = openbao.health(bao_addr, ca)
        if health is None:
            bao_health = "unreachable"
        elif not health.get("initialized"):
            bao_health = "uninitialised"
        else:
            bao_health = "sealed" if health.get("sealed") else "ok"
    rows.append({"component": "openbao", "pid": bao_pid, "address": bao_addr, "health": bao_health})
    mio_pid = running_pid(paths.minio_pid, "minio")
    endpoint = _endpoint(config["minio_port"]) if "minio_port" in config else None
    mio_health = "down"
    if mio_pid is not None and endpoint is not None:
        mio_health = "ok" if minio.ready(endpoint, paths.ca) else "unreachable"
    rows.append({"component": "minio", "pid": mio_pid, "address": endpoint, "health": mio_health})
    return rows


def stop_openbao(state_dir: Path, *, kill: bool = True) -> None:
    """Stop OpenBao only (fault injection): SIGKILL by default, SIGTERM with `kill=False`."""
    paths = _Paths(state_dir)
    stop_process(paths.bao_pid, "bao", grace_s=0 if kill else 10, ports=_bao_ports(paths))


def start_openbao(state_dir: Path) -> None:
    """Start OpenBao again on its recorded port and unseal it; no-op if it runs."""
    paths = _Paths(state_dir)
    _start_openbao(paths, _config(paths))
