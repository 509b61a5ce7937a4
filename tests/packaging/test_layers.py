"""`lint-imports` checks the contracts in pyproject.toml against the installed code: the
layers, and that the core and the runner import no package an extra installs.

`make lint-imports` checks the tree (the stage folders live in fiolake/); this
checks the unpacked wheel, what users install, and that a planted forbidden import breaks it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.conftest import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# Builds a wheel and a venv: the full tier (make test), not make test-fast.
pytestmark = pytest.mark.slow


def lint_imports(site: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_installed_code_keeps_every_layer_contract(unpacked_wheel: Path, tmp_path: Path) -> None:
    done = lint_imports(unpacked_wheel, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_a_planted_upward_import_breaks_the_contract(unpacked_wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(unpacked_wheel, site)
    layout = site / "fiolake" / "layout.py"
    layout.write_text(layout.read_text() + "\nimport fiolake.runner.execute  # planted\n")
    done = lint_imports(site, tmp_path)
    assert done.returncode == 1
    assert "the core imports nothing above it BROKEN" in done.stdout
    assert "fiolake.layout -> fiolake.runner.execute" in done.stdout


def test_runner_importing_the_aggregator_breaks_the_contract(
    unpacked_wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    shutil.copytree(unpacked_wheel, site)
    spool = site / "fiolake" / "runner" / "spool.py"
    spool.write_text(spool.read_text() + "\nimport fiolake.aggregator.lake.lake  # planted\n")
    done = lint_imports(site, tmp_path)
    assert done.returncode == 1
    assert "BROKEN" in done.stdout and "fiolake.runner.spool" in done.stdout


def test_the_runner_importing_duckdb_breaks_the_extras_contract(
    unpacked_wheel: Path, tmp_path: Path
) -> None:
    """`pip install fiolake` has no duckdb: a runner module importing it must not pass."""
    site = tmp_path / "site"
    shutil.copytree(unpacked_wheel, site)
    spool = site / "fiolake" / "runner" / "spool.py"
    spool.write_text(spool.read_text() + "\nimport duckdb  # planted\n")
    done = lint_imports(site, tmp_path)
    assert done.returncode == 1
    assert "the core and the runner import no extra's package BROKEN" in done.stdout
    assert "fiolake.runner is not allowed to import duckdb" in done.stdout
    assert "fiolake.runner.spool -> duckdb" in done.stdout


def test_the_core_reaching_scipy_through_another_module_breaks_the_extras_contract(
    unpacked_wheel: Path, tmp_path: Path
) -> None:
    """Forbidden contracts follow indirect imports: a core module that reaches scipy only
    through a module outside the contract's list is caught all the same."""
    site = tmp_path / "site"
    shutil.copytree(unpacked_wheel, site)
    (site / "fiolake" / "planted.py").write_text("import scipy\n")
    steady = site / "fiolake" / "steady.py"
    steady.write_text(steady.read_text() + "\nimport fiolake.planted  # planted\n")
    done = lint_imports(site, tmp_path)
    assert done.returncode == 1
    assert "fiolake.steady is not allowed to import scipy" in done.stdout
    assert "fiolake.steady -> fiolake.planted" in done.stdout
    assert "fiolake.planted -> scipy" in done.stdout
