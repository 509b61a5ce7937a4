"""The `fiolake` command: a thin click layer over the library packages.

Subcommands live in the modules of `fiolake/cli/` named in COMMANDS and are imported
only when invoked, so `fiolake --help` stays fast and one component's dependencies never
load another's.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import click

from fiolake.cli.output import FORMATS
from fiolake.errors import FiolakeError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# command name -> (module, attribute, one-line help shown by `fiolake --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("fiolake.cli.local", "run", "Run fio job files locally and store results."),
    "validate": ("fiolake.cli.local", "validate", "Check job files against the policy."),
    "profiles": ("fiolake.cli.local", "profiles", "List the shipped fio profiles."),
    "sql": ("fiolake.cli.analysis", "sql", "Query the lake with SQL (DuckDB)."),
    "compare": ("fiolake.cli.comparisons", "compare", "Ratios of backends or runs, decided."),
    "trend": ("fiolake.cli.timeline", "trend", "A metric over time, change points marked."),
    "regressions": ("fiolake.cli.timeline", "regressions", "Change points for the worse."),
    "env-diff": ("fiolake.cli.analysis", "env_diff", "How two runs' environments differ."),
    "lake": ("fiolake.cli.analysis", "lake", "Lake hygiene: compact, prune, check."),
    "app": ("fiolake.cli.analysis", "app", "Open the Streamlit app."),
    "publish": ("fiolake.cli.distributed", "publish", "Publish signed job manifests."),
    "runner": ("fiolake.cli.distributed", "runner", "Pull jobs from the lake and run them."),
    "status": ("fiolake.cli.status", "status", "Progress of a campaign, or of recent ones."),
    "keygen": ("fiolake.cli.distributed", "keygen", "Create a local Ed25519 signing key."),
    "stack": ("fiolake.cli.stack", "stack", "Local MinIO (TLS) + OpenBao stack."),
    "gate": ("fiolake.cli.gate", "gate", "Exit 1 when a campaign is worse than its baseline."),
    "report": ("fiolake.cli.report", "report", "The gate's answer as one offline HTML file."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[cmd_name]
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short) for name, (_, _, short) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="fiolake")
def cli() -> None:
    """Benchmark storage with fio; keep every result in a Parquet lake you can query.

    \b
    Quick start (no servers needed):
      fiolake run --dir /mnt/nvme --backend nvme      # default suite, ~90 s
      fiolake sql "SELECT backend, job_name, direction, iops FROM results"
      fiolake compare --backend nvme --backend ceph

    The lake is ./lake unless --lake or FIOLAKE_LAKE says otherwise (a directory or
    s3://BUCKET/PREFIX). Data goes to stdout, progress and logs to stderr.
    """


def format_option(default: str = "table") -> Callable[[Any], Any]:
    """`--format table|csv|json` for commands whose output is data."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default=default,
        show_default=True,
        help="table for people (human units); csv/json carry raw units (bytes, ns, B/s).",
    )


def lake_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--lake` shared by every command that reads or writes the lake."""
    return click.option(
        "--lake",
        envvar="FIOLAKE_LAKE",
        show_envvar=True,
        default="./lake",
        show_default=True,
        help="Lake location: a directory or s3://BUCKET[/PREFIX].",
    )(fn)


def fail(exc: FiolakeError) -> click.ClickException:
    """Turn a library error into the click exception with the right exit code."""
    if exc.exit_code == 2:
        return click.UsageError(str(exc))
    err = click.ClickException(str(exc))
    # click types exit_code as a ClassVar, yet reads it from the instance it catches.
    err.exit_code = exc.exit_code  # type: ignore[misc]
    return err


def main() -> None:
    """Console-script entry point: library errors become `Error: …` and exit codes."""
    try:
        # Without standalone mode click *returns* the code of `raise Exit(n)`/`ctx.exit(n)`.
        code = cli.main(standalone_mode=False, prog_name="fiolake")
        if isinstance(code, int) and code:
            sys.exit(code)
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except FiolakeError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
