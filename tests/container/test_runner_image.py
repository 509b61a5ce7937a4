"""The runner image's promises, checked on the real image (no stack needed).

uid 10001, a read-only root (as compose.yaml and infra/k8s/ run it), writes refused
everywhere but the target and spool under /bench, fio and fiolake inside; `pip install
fiolake` without extras: every module of the core, the runner and the CLI imports, a job
runs into a lake, and a command that needs an extra says which.
"""

from __future__ import annotations

import json
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


# Every module of the core, the runner and the CLI, imported in the image; then which of
# the extras' packages got imported (none may be) or are installed at all (none should be).
IMPORT_EVERY_MODULE = """
import importlib, importlib.util, json, pkgutil, sys
import fiolake, fiolake.cli, fiolake.runner, fiolake.signing
from fiolake.cli.extras import EXTRA_OF_MODULE
names = [m.name for m in pkgutil.iter_modules(fiolake.__path__, "fiolake.")
         if m.name != "fiolake.__main__"  # runs the CLI
         and (not m.ispkg or m.name in ("fiolake.cli", "fiolake.signing", "fiolake.runner"))]
for package in (fiolake.cli, fiolake.runner, fiolake.signing):
    names += [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
for name in names:
    importlib.import_module(name)
print(json.dumps({
    "modules": sorted(names),
    "imported": sorted(m for m in EXTRA_OF_MODULE if m in sys.modules),
    "installed": sorted(m for m in EXTRA_OF_MODULE if importlib.util.find_spec(m)),
}))
"""


def test_every_core_runner_and_cli_module_imports_without_an_extra(
    images: float, tmp_path: Path
) -> None:
    out = run_in_runner(tmp_path, f"python -c '{IMPORT_EVERY_MODULE}'")
    found = json.loads(out)
    assert {"fiolake.runner.distributed.service", "fiolake.runner.fio.process"} <= set(
        found["modules"]
    )
    assert {"fiolake.cli.comparisons", "fiolake.steady", "fiolake.signing.vault"} <= set(
        found["modules"]
    )
    assert (found["imported"], found["installed"]) == ([], [])


def test_a_job_runs_into_a_lake_and_compare_names_its_extra(images: float, tmp_path: Path) -> None:
    os.chown(tmp_path, 10001, 10001)
    out = run_in_runner(
        tmp_path,
        "cd /bench && fiolake run random-reads --create-dir --dir /bench/target --lake /bench/lake"
        " --host-lock /bench/host.lock --runtime 1 --size 4M --format json;"
        " echo ---; fiolake compare --lake /bench/lake 2>&1; echo compare-exit=$?",
    )
    summary, compared = out.split("\n---\n")
    rows = json.loads(summary)
    assert {(row["job_name"], row["status"]) for row in rows} == {("random-reads", "ok")}, rows
    assert [p.name for p in (tmp_path / "lake" / "commits").glob("*.json")], "not committed"
    assert compared.strip().splitlines() == [
        "Error: fiolake compare needs duckdb, from fiolake's analysis extra — "
        "pip install 'fiolake[analysis]'",
        "compare-exit=2",
    ]
