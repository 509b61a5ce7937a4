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
from contextlib import contextmanager
from dataclasses import dataclass, replace
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
        if "images" in getattr(item, "fixturenames", ()):
            # The suite's 300 s bounds the test itself, not its fixtures: the first test of
            # a worker builds every image in its setup (272 s of a fresh clone's make test
            # beside three busy workers, and the login box's setup then ran out, 6 errors),
            # and each fixture here bounds its own steps (the build 1800 s, podman 120 s,
            # compose 600 s, init 240 s, a host-side fiolake run 180 s).
            item.add_marker(pytest.mark.timeout(300, func_only=True))


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


def container_log(box: Compose, container: str) -> str:
    """A container's output, stdout and stderr (fiolake and Streamlit log to stderr)."""
    proc = subprocess.run(
        ["podman", "logs", container],
        env=box.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
    )  # fmt: skip
    return proc.stdout


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
    """A running compose project: its name, environment, shared `stack` volume and files
    (compose.yaml, then overrides such as compose.login.yaml)."""

    project: str
    env: dict[str, str]
    stack_dir: Path
    app_port: int
    files: tuple[str, ...] = ("compose.yaml",)

    def run(self, *args: str, check: bool = True, timeout: float = 600) -> str:
        files = [arg for name in self.files for arg in ("-f", str(ROOT / name))]
        proc = subprocess.run(
            [COMPOSE, *files, "-p", self.project, *args],
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


@contextmanager
def compose_project(*files: str, runners: int) -> Iterator[Compose]:
    """A compose project of `files` on free ports, not started yet; on exit `down -v` and
    whatever podman still holds of it (containers, pod, volumes) removed."""
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
        "FIOLAKE_RUNNERS": str(runners),
        "FIOLAKE_LEASE_TTL": "6",
        "FIOLAKE_BACKEND": "container-volume",
    }
    box = Compose(f"fiolake-ct-{uuid.uuid4().hex[:6]}", env, Path("/nonexistent"), app, files)
    try:
        yield box
    finally:
        box.run("down", "-v", "-t", "10", check=False)
        box.force_clean()


def initialised(box: Compose, *wanted: str, timeout_s: float = 240) -> Compose:
    """`box` with its `stack` volume's host path, once init has written `wanted` there
    (paths relative to /stack)."""
    mount = podman("volume", "inspect", "--format", "{{.Mountpoint}}", f"{box.project}_stack")
    box = replace(box, stack_dir=Path(mount.strip()))
    deadline = time.monotonic() + timeout_s
    while not all((box.stack_dir / path).exists() for path in wanted):
        assert time.monotonic() < deadline, podman("logs", f"{box.project}_init_1", check=False)
        time.sleep(1)
    return box


@pytest.fixture(scope="module")
def box(images: float) -> Iterator[Compose]:
    """compose.yaml up with podman-compose on free ports: MinIO (TLS), OpenBao, init, two
    runners (6 s leases, so a killed runner's job is taken over quickly), the app."""
    with compose_project("compose.yaml", runners=2) as box:
        box.run("up", "-d", "--no-build")
        yield initialised(box, "env/analyst.env")
