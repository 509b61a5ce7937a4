"""Each image holds what its stage needs (docs/deploy.md): sizes within their budgets, the
OpenBao image the `bao` binary alone, the init image the MinIO client the runner lacks."""

from __future__ import annotations

import subprocess

import pytest

from tests.container.conftest import podman, podman_env

MB = 1_000_000  # podman images reports sizes in SI units
BUDGET = {"runner": 500 * MB, "openbao": 400 * MB}


def size(name: str) -> int:
    return int(podman("image", "inspect", "--format", "{{.Size}}", f"fiolake-{name}:local"))


@pytest.mark.parametrize("name", sorted(BUDGET))
def test_image_within_its_budget(images: float, name: str) -> None:
    assert size(name) <= BUDGET[name], f"fiolake-{name}:local is {size(name) / MB:.0f} MB"


def test_the_openbao_image_is_bao_without_python(images: float) -> None:
    out = podman(
        "run", "--rm", "--entrypoint", "sh", "fiolake-openbao:local", "-c",
        "bao version; command -v python3 fio fiolake || echo none-of-them; id -u",
    )  # fmt: skip
    lines = out.split("\n")
    assert lines[0].startswith("OpenBao v"), out
    assert lines[1:3] == ["none-of-them", "10001"], out


def test_the_init_image_has_the_minio_client_and_no_analysis(images: float) -> None:
    script = (
        "import importlib.util as u; "
        "print([m for m in ('minio', 'duckdb', 'streamlit', 'scipy') if u.find_spec(m)])"
    )
    out = podman("run", "--rm", "--entrypoint", "python", "fiolake-init:local", "-c", script)
    assert out.strip() == "['minio']"


def test_the_app_image_refuses_every_interface_without_a_login(images: float) -> None:
    """Its default CMD is `--address 0.0.0.0`: with no FIOLAKE_APP_AUTH it exits 2 before
    serving anything (infra/k8s/app.yaml gives it the login file)."""
    proc = subprocess.run(
        ["podman", "run", "--rm", "fiolake-app:local"],
        env=podman_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Error: fiolake app on 0.0.0.0 would show the lake to anyone" in proc.stderr
