"""The runner image's promises, checked on the real image (no stack needed).

uid 10001, a read-only root (as compose.yaml and infra/k8s/ run it), writes refused
everywhere but the target and spool under /bench, fio and fiolake inside.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.container.conftest import podman

IMAGE = "fiolake-runner:local"


def run_in_runner(bench: Path, script: str) -> str:
    return podman(
        "run",
        "--rm",
        "--read-only",
        "--tmpfs",
        "/tmp",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "-v",
        f"{bench}:/bench",
        "--entrypoint",
        "sh",
        IMAGE,
        "-c",
        script,
    )


def test_runs_as_uid_10001_with_fio_and_fiolake(images: float, tmp_path: Path) -> None:
    out = run_in_runner(tmp_path, "id -u; id -g; fio --version; fiolake --version")
    assert out.split()[:3] == ["10001", "10001", "fio-3.33"]
    assert "fiolake, version" in out


def test_only_bench_is_writable(images: float, tmp_path: Path) -> None:
    os.chown(tmp_path, 10001, 10001)
    script = (
        "for d in / /opt/fiolake /etc /usr/local/bin /stack /home; do"
        "  touch $d/probe 2>/dev/null && echo WROTE $d || echo refused $d; done;"
        " mkdir -p /bench/target /bench/spool && touch /bench/target/f /bench/spool/f"
        " && echo bench-ok"
    )
    out = run_in_runner(tmp_path, script).split("\n")
    assert [line for line in out if line.startswith("WROTE")] == []
    assert "bench-ok" in out
    assert (tmp_path / "target" / "f").exists() and (tmp_path / "spool" / "f").exists()


def test_fio_runs_against_the_bench_mount(images: float, tmp_path: Path) -> None:
    os.chown(tmp_path, 10001, 10001)
    out = run_in_runner(
        tmp_path,
        "fio --name=t --directory=/bench --size=4M --rw=randread --bs=4k --runtime=1"
        " --time_based --output-format=terse --output=/tmp/o && cut -d';' -f3,5,6 /tmp/o",
    )
    name, error, read_kib = out.strip().split(";")
    assert (name, error) == ("t", "0") and int(read_kib) > 0


def test_the_image_holds_this_checkouts_fiolake(images: float, tmp_path: Path) -> None:
    """A bind-mounted wheel is not in the layer cache's key: without the wheel's hash as a
    build argument, a rebuilt image kept the previous fiolake (seen: a runner that refused
    manifests of a newer publisher)."""
    import hashlib

    import fiolake.runner.host.lock as here

    source = Path(here.__file__).read_bytes()
    script = (
        "python3 -c 'import hashlib, fiolake.runner.host.lock as m; "
        'print(hashlib.sha256(open(m.__file__, "rb").read()).hexdigest())\''
    )
    assert run_in_runner(tmp_path, script).strip() == hashlib.sha256(source).hexdigest()
