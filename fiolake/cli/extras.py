"""Which optional extra installs a missing module, and the error that says so.

`pip install fiolake` gives the core, the runner and the CLI (pyproject.toml's
`[project] dependencies`); the other stages come with extras. A command that imports a
module no one installed reaches `LazyGroup`, which asks `missing_extra` for the message:
`Error: fiolake compare needs duckdb, from fiolake's analysis extra — pip install
'fiolake[analysis]'`, exit 2. A missing module that no extra provides is a bug, not a
missing install: it keeps its traceback.
"""

from __future__ import annotations

import importlib.util

import click

# top-level import name -> the extra in pyproject.toml that installs it
# (tests/packaging/test_extras.py keeps this in step with pyproject.toml).
EXTRA_OF_MODULE: dict[str, str] = {
    "duckdb": "analysis",
    "duckdb_extension_httpfs": "analysis",
    "deltalake": "analysis",
    "scipy": "analysis",
    "pytz": "analysis",
    "streamlit": "app",
    "altair": "app",
    "pandas": "app",
    "authlib": "app",  # st.login (streamlit[auth])
    "httpx": "app",
    "minio": "stack",
}


def missing_extra(exc: ModuleNotFoundError, command: str) -> click.ClickException | None:
    """`Error: <command> needs <module>, from fiolake's <extra> extra — pip install …`
    (exit 2) when an extra provides the missing module; None when none does."""
    module = (exc.name or "").partition(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is None:
        return None
    err = click.ClickException(
        f"{command} needs {module}, from fiolake's {extra} extra — pip install 'fiolake[{extra}]'"
    )
    # A missing install is a usage problem (exit 2); no usage line: the command was right.
    err.exit_code = 2  # type: ignore[misc]
    return err


def require_extras(*extras: str) -> None:
    """Raise ModuleNotFoundError for the first module of `extras` (in that order) that is
    not installed, for a command that imports them in another process (`fiolake app`:
    Streamlit) or only after it started work. Looks them up without importing them."""
    for extra in extras:
        for module, provider in EXTRA_OF_MODULE.items():
            if provider == extra and importlib.util.find_spec(module) is None:
                raise ModuleNotFoundError(f"No module named {module!r}", name=module)
