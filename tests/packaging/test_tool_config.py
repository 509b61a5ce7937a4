"""Every core module is under the core's rules: strict mypy and the core import contract.

A core module added without joining both lists would escape them silently (as
`jobhash` and `steady` once escaped the import contract), so the lists are checked
against the files.
"""

from __future__ import annotations

import tomllib

from tests.packaging.conftest import REPO

CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())
# fiolake/*.py, less the package marker and `python -m fiolake` (the CLI's entry point).
CORE = sorted(
    f"fiolake.{p.stem}"
    for p in (REPO / "fiolake").glob("*.py")
    if p.stem not in ("__init__", "__main__")
) + ["fiolake.signing"]


def test_every_core_module_is_type_checked_strictly() -> None:
    strict = [
        o for o in CONFIG["tool"]["mypy"]["overrides"] if o.get("disallow_untyped_defs") is True
    ]
    assert len(strict) == 1
    assert strict[0]["disallow_any_generics"] and strict[0]["warn_return_any"]
    modules = set(strict[0]["module"])
    assert [m for m in CORE if m not in modules] == []
    assert "fiolake.signing.*" in modules


def test_every_core_module_is_in_the_core_import_contract() -> None:
    [core] = [
        c
        for c in CONFIG["tool"]["importlinter"]["contracts"]
        if c["name"] == "the core imports nothing above it"
    ]
    assert [m for m in CORE if m not in core["source_modules"]] == []
