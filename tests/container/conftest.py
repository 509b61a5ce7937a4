"""The container tier: the real images, built with podman from a Debian base, run for real.

Every test here is marked `container` (excluded from `make test-fast`, run by `make test`)
and skips with the reason when podman or podman-compose is absent (`make sysdeps`,
`make venv`). podman reads the project's one containers.conf (runc, ulimits within the
host's hard limits, host networking), written by infra/containers/containers-conf.sh.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fiolake.stack.process import free_ports

ROOT = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = ROOT / "build" / "containers.conf"
COMPOSE = str(Path(sys.executable).parent / "podman-compose")
LOCK_DIR = Path("/run/lock/fiolake")  # the host fio lock's directory, shared with runners


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.container)


def _missing() -> str | None:
    if shutil.which("podman") is None:
        return "podman is not installed — run `make sysdeps`"
    if os.geteuid() != 0:
        return "the container tier drives rootful podman and chowns dirs to uid 10001: run as root"
    if not Path(COMPOSE).exists():
        return "podman-compose is not installed — run `make venv` (dev extra)"
    return None


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def podman(*args: str, check: bool = True, timeout: float = 120) -> str:
    """Run podman with the project's containers.conf; its stdout."""
    proc = subprocess.run(
        ["podman", *args], env=podman_env(), capture_output=True, text=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {proc.stderr}")
    return proc.stdout


@pytest.fixture(scope="session")
def images() -> float:
    """`make images`' script: every image, cached after the first build; seconds taken."""
    reason = _missing()
    if reason:
        pytest.skip(reason)
    started = time.monotonic()
    subprocess.run(
        ["bash", str(ROOT / "infra" / "containers" / "images.sh")],
        env={**podman_env(), "PY": sys.executable},
        cwd=ROOT,
        check=True,
        timeout=1800,
    )
    return time.monotonic() - started


@dataclass(frozen=True)
class Compose:
    """A running compose.yaml project: its name, environment and shared `stack` volume."""

    project: str
    env: dict[str, str]
    stack_dir: Path
    app_port: int

    def run(self, *args: str, check: bool = True, timeout: float = 600) -> str:
        proc = subprocess.run(
            [COMPOSE, "-f", str(ROOT / "compose.yaml"), "-p", self.project, *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"podman-compose {' '.join(args)}: {proc.stderr[-3000:]}")
        return proc.stdout

    def role_env(self, role: str) -> dict[str, str]:
        """The role's environment file as init wrote it, with the CA at its host path."""
        env = dict(os.environ)
        for line in (self.stack_dir / "env" / f"{role}.env").read_text().splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value.strip("'")
        env["FIOLAKE_CA_BUNDLE"] = env["VAULT_CACERT"] = str(self.stack_dir / "ca.crt")
        return env

    def leftovers(self) -> list[str]:
        """Containers, volumes, pods and networks this project still has."""
        label = f"label=io.podman.compose.project={self.project}"
        found = podman("ps", "-a", "--filter", label, "--format", "{{.Names}}").split()
        found += [
            v
            for v in podman("volume", "ls", "--format", "{{.Name}}").split()
            if v.startswith(f"{self.project}_")
        ]
        found += [
            p
            for p in podman("pod", "ls", "--format", "{{.Name}}").split()
            if p == f"pod_{self.project}"
        ]
        found += [
            n
            for n in podman("network", "ls", "--format", "{{.Name}}").split()
            if n.startswith(f"{self.project}_")
        ]
        return found

    def force_clean(self) -> None:
        label = f"label=io.podman.compose.project={self.project}"
        for name in podman("ps", "-a", "--filter", label, "--format", "{{.Names}}").split():
            podman("rm", "-f", "-v", name, check=False)
        podman("pod", "rm", "-f", f"pod_{self.project}", check=False)
        for volume in podman("volume", "ls", "--format", "{{.Name}}").split():
            if volume.startswith(f"{self.project}_"):
                podman("volume", "rm", "-f", volume, check=False)


@pytest.fixture(scope="module")
def box(images: float) -> Iterator[Compose]:
    """compose.yaml up with podman-compose on free ports: MinIO (TLS), OpenBao, init, two
    runners (6 s leases, so a killed runner's job is taken over quickly), the app."""
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    LOCK_DIR.chmod(0o1777)  # like /run/lock: uid 10001 in the runners takes the host lock too
    bao, cluster, minio, console, app = free_ports(5)
    env = {
        **podman_env(),
        "FIOLAKE_BAO_PORT": str(bao),
        "FIOLAKE_BAO_CLUSTER_PORT": str(cluster),
        "FIOLAKE_MINIO_PORT": str(minio),
        "FIOLAKE_MINIO_CONSOLE_PORT": str(console),
        "FIOLAKE_APP_PORT": str(app),
        "FIOLAKE_RUNNERS": "2",
        "FIOLAKE_LEASE_TTL": "6",
        "FIOLAKE_BACKEND": "container-volume",
    }
    project = f"fiolake-ct-{uuid.uuid4().hex[:6]}"
    box = Compose(project, env, Path("/nonexistent"), app)
    try:
        box.run("up", "-d", "--no-build")
        mount = podman("volume", "inspect", "--format", "{{.Mountpoint}}", f"{project}_stack")
        box = Compose(project, env, Path(mount.strip()), app)
        deadline = time.monotonic() + 240
        while not (box.stack_dir / "env" / "analyst.env").exists():
            assert time.monotonic() < deadline, podman("logs", f"{project}_init_1", check=False)
            time.sleep(1)
        yield box
    finally:
        box.run("down", "-v", "-t", "10", check=False)
        box.force_clean()
