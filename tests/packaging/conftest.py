"""The wheel built once per session from this tree, as `pip wheel . --no-deps` builds it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The path of fiolake's wheel, built into a temporary directory."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
    )
    [wheel] = out.glob("fiolake-*.whl")
    return wheel


@pytest.fixture(scope="session")
def unpacked_wheel(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel's files unpacked into a directory (what site-packages would hold)."""
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "zipfile", "-e", str(built_wheel), str(site)], check=True)
    return site
