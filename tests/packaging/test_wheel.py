"""The wheel users install: one top-level name, its data inside, and it works alone.

The wheel is built from this tree (`pip wheel . --no-deps`) and installed into a fresh
venv outside the checkout. Its third-party dependencies come from the test venv through
a plain path entry (so no registry is needed and the test takes seconds); that entry does
not run the test venv's `.pth` hooks, so the checkout's editable install stays invisible.
A second venv holds the wheel with its own dependencies and no extra, as `pip install
fiolake` gives them (pip resolves them from PyPI through its cache, or from `make images`'
runner wheels): `run` works there, and a command that needs an extra names it.
Every command runs from an empty directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.packaging.conftest import REPO

SHIPPED_PROFILES = sorted(p.stem for p in (REPO / "job_files").glob("*.fio"))

# Builds a wheel and a venv: the full tier (make test), not make test-fast.
pytestmark = pytest.mark.slow


def test_wheel_installs_one_top_level_name(built_wheel: Path) -> None:
    names = zipfile.ZipFile(built_wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"fiolake", "fiolake-0.1.0.dist-info"}
    top_level = {n.split("/")[1] for n in names if n.startswith("fiolake/")}
    assert {"runner", "aggregator", "app", "stack", "job_files", "cli", "signing"} <= top_level


def test_wheel_carries_every_module_and_data_file(built_wheel: Path) -> None:
    names = set(zipfile.ZipFile(built_wheel).namelist())
    folders = {
        "fiolake/": REPO / "fiolake",
        "fiolake/runner/": REPO / "runner",
        "fiolake/aggregator/": REPO / "aggregator",
        "fiolake/app/": REPO / "app",
        "fiolake/stack/": REPO / "infra" / "stack",
        "fiolake/job_files/": REPO / "job_files",
    }
    missing = []
    for prefix, folder in folders.items():
        for path in folder.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                name = prefix + path.relative_to(folder).as_posix()
                if name not in names:
                    missing.append(name)
    assert missing == []


def without_pythonpath() -> dict[str, str]:
    """The environment without PYTHON* variables: a checkout on PYTHONPATH (its
    fiolake.egg-info from the wheel build) would count as fiolake installed already."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


@pytest.fixture(scope="module")
def wheel_venv(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv outside the checkout with only the wheel installed into it."""
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", str(built_wheel)],
        check=True, env=without_pythonpath(),
    )  # fmt: skip
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def run_installed(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIOLAKE_", "PYTHON"))}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    return subprocess.run(
        [str(venv / "bin" / "fiolake"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_installed_fiolake_is_the_wheel_not_the_checkout(wheel_venv: Path, tmp_path: Path) -> None:
    code = "import fiolake.runner; print(fiolake.runner.__file__)"
    done = subprocess.run(
        [str(wheel_venv / "bin" / "python"), "-c", code],
        cwd=tmp_path,
        env=without_pythonpath(),
        capture_output=True,
        text=True,
        check=True,
    )  # fmt: skip
    assert done.stdout.startswith(str(wheel_venv)), done.stdout


def test_profiles_lists_every_shipped_profile_from_an_empty_dir(
    wheel_venv: Path, tmp_path: Path
) -> None:
    done = run_installed(wheel_venv, tmp_path, "profiles", "--format", "csv")
    assert done.returncode == 0, done.stderr
    names = [line.split(",")[0] for line in done.stdout.splitlines()[1:]]
    assert names == SHIPPED_PROFILES


def test_validate_run_and_stack_help_work_from_the_wheel(wheel_venv: Path, tmp_path: Path) -> None:
    validated = run_installed(wheel_venv, tmp_path, "validate", "random-reads")
    assert validated.returncode == 0, validated.stderr
    target = tmp_path / "target"
    target.mkdir()
    ran = run_installed(
        wheel_venv, tmp_path, "run", "random-reads", "--create-dir", "--dir", str(target),
        "--runtime", "1", "--size", "4M", "--format", "json",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert list((tmp_path / "lake" / "commits").glob("*.json")), "the run was committed"
    helped = run_installed(wheel_venv, tmp_path, "stack", "up", "--help")
    assert helped.returncode == 0 and "Usage: fiolake stack up" in helped.stdout


# -- `pip install fiolake` without extras: the runner and the CLI, each command either works
# or says which extra it needs.
@pytest.fixture(scope="module")
def bare_venv(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its own dependencies only (no extras), resolved by
    pip like a user's install: from PyPI through pip's cache, or from `make images`'
    runner wheels when they are there."""
    venv = tmp_path_factory.mktemp("bare-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    local = REPO / "build" / "wheels" / "runner"
    find_links = ["--find-links", str(local)] if local.is_dir() else []
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
         *find_links, str(built_wheel)],
        check=True, timeout=600, env=without_pythonpath(),
    )  # fmt: skip
    return venv


def test_without_extras_nothing_of_an_extra_is_installed(bare_venv: Path, tmp_path: Path) -> None:
    code = (
        "import importlib.util; from fiolake.cli.extras import EXTRA_OF_MODULE; "
        "print([m for m in EXTRA_OF_MODULE if importlib.util.find_spec(m)])"
    )
    done = subprocess.run(
        [str(bare_venv / "bin" / "python"), "-c", code],
        cwd=tmp_path, env=without_pythonpath(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_without_extras_run_works_and_compare_and_app_name_their_extra(
    bare_venv: Path, tmp_path: Path
) -> None:
    target = tmp_path / "target"
    ran = run_installed(
        bare_venv, tmp_path, "run", "random-reads", "--create-dir", "--dir", str(target),
        "--runtime", "1", "--size", "4M", "--format", "csv",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "random-reads" in ran.stdout and ",ok," in ran.stdout
    assert list((tmp_path / "lake" / "commits").glob("*.json")), "the run was committed"
    for command, module, extra in (("compare", "duckdb", "analysis"), ("app", "streamlit", "app")):
        done = run_installed(bare_venv, tmp_path, command)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr == (
            f"Error: fiolake {command} needs {module}, from fiolake's {extra} extra — "
            f"pip install 'fiolake[{extra}]'\n"
        )


def test_without_extras_every_command_has_its_help(bare_venv: Path, tmp_path: Path) -> None:
    from fiolake.cli import COMMANDS

    for command in COMMANDS:
        done = run_installed(bare_venv, tmp_path, command, "--help")
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.startswith(f"Usage: fiolake {command}"), command
