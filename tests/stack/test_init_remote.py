"""`fiolake stack init-remote` (compose's `init`) against real OpenBao and MinIO on loopback.

The servers are started the way compose starts them: each waits for the files `init`
writes into the shared directory (OpenBao's config, MinIO's certificate and root user).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
import time
from pathlib import Path

import pytest

from fiolake.stack.minio import ensure_minio, server_argv
from fiolake.stack.openbao import bao_binary
from fiolake.stack.process import free_ports, kill_pid, start_process
from fiolake.stack.remote import RemoteTopology, init_remote
from fiolake.store import S3Store

pytestmark = pytest.mark.stack


def _wait_for(*paths: Path, outcome: dict, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not all(p.exists() and p.stat().st_size for p in paths):
        assert "error" not in outcome, outcome["error"]
        assert time.monotonic() < deadline, f"never written: {paths}"
        time.sleep(0.1)


def _env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        values[name] = shlex.split(value)[0]
    return values


def test_init_remote_sets_up_services_started_like_compose(tmp_path: Path) -> None:
    out = tmp_path / "stack"
    bao_port, cluster_port, minio_port, console_port = free_ports(4)
    (tmp_path / "bao-data").mkdir()
    topo = RemoteTopology(
        bao_addr=f"https://127.0.0.1:{bao_port}",
        bao_listen=f"127.0.0.1:{bao_port}",
        bao_cluster_listen=f"127.0.0.1:{cluster_port}",
        bao_data_dir=tmp_path / "bao-data",
        bao_names=["localhost", "127.0.0.1"],
        minio_endpoint=f"https://127.0.0.1:{minio_port}",
        minio_names=["localhost", "127.0.0.1"],
        timeout_s=90,
    )
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["env"] = init_remote(out, topo)
        except Exception as exc:  # noqa: BLE001 - re-raised in the test thread
            outcome["error"] = exc

    pids: list[int] = []
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    try:
        _wait_for(out / "openbao" / "bao.hcl", outcome=outcome)
        pids.append(
            start_process(
                [str(bao_binary()), "server", f"-config={out / 'openbao' / 'bao.hcl'}"],
                env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
                log_path=tmp_path / "bao.log",
                pid_path=tmp_path / "bao.pid",
            )
        )
        root_env = out / "secrets" / "minio-root.env"
        _wait_for(out / "minio-certs" / "public.crt", root_env, outcome=outcome)
        root = _env_file(root_env)
        pids.append(
            start_process(
                server_argv(
                    ensure_minio(),
                    address=f"127.0.0.1:{minio_port}",
                    console_address=f"127.0.0.1:{console_port}",
                    certs_dir=out / "minio-certs",
                    data_dir=tmp_path / "minio-data",
                ),
                env={"PATH": os.environ["PATH"], **root},
                log_path=tmp_path / "minio.log",
                pid_path=tmp_path / "minio.pid",
            )
        )
        worker.join(timeout=120)
        assert "error" not in outcome, outcome.get("error")
        env = outcome["env"]

        runner_env = out / "env" / "runner.env"
        assert runner_env.stat().st_mode & 0o077 == 0
        script = f'. {runner_env}; echo "$FIOLAKE_S3_ENDPOINT|$FIOLAKE_CA_BUNDLE"'
        shown = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
        assert shown.stdout.strip() == f"{topo.minio_endpoint}|{out / 'ca.crt'}"

        runner = S3Store(env.bucket, "", env.s3_settings("runner"))
        runner.put("claims/remote-test.json", b"{}", if_none_match=True)

        # Every /stack path compose.yaml relies on was written by init.
        compose = (Path(__file__).resolve().parents[2] / "compose.yaml").read_text()
        used = set(re.findall(r"/stack/[\w./-]*\w", compose))
        assert "/stack/env/runner.env" in used
        assert [p for p in used if not (out / p.removeprefix("/stack/")).exists()] == []

        again = init_remote(out, topo)  # compose re-runs init on every `up`
        assert again.roles["runner"].access_key == env.roles["runner"].access_key
        assert again.root_token == env.root_token
    finally:
        for pid in pids:
            kill_pid(pid, grace_s=5)
