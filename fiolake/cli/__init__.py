"""The `fiolake` command: a thin click layer over the library packages.

Subcommands live in the modules of `fiolake/cli/` named in COMMANDS and are imported
only when invoked, so `fiolake --help` stays fast and one component's dependencies never
load another's. Library errors (`FiolakeError`) become `Error: …` and an exit code in one
place, `LazyGroup.invoke`: commands let them propagate. So does a module an optional extra
installs (`fiolake compare` without `fiolake[analysis]`): `LazyGroup` names the extra
(`fiolake.cli.extras`), exit 2.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, NoReturn

import click

from fiolake.cli.extras import missing_extra
from fiolake.cli.output import FORMATS
from fiolake.errors import FiolakeError

# numpy's and scipy's OpenBLAS each start a thread per core on import that spins while it
# waits for work: 0.15 s of the 1.4 s of CPU a `gate` used on 2 cores (issue 44), taken
# from DuckDB and the interpreter. fiolake does no linear algebra. Set before any command
# imports numpy, for the processes it starts too (the app); a user's own setting stands.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# command name -> (module, attribute, one-line help shown by `fiolake --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("fiolake.cli.local", "run", "Run fio job files locally and store results."),
    "validate": ("fiolake.cli.jobfiles", "validate", "Check job files against the policy."),
    "import": ("fiolake.cli.importing", "import_", "Bring fio results made elsewhere in."),
    "profiles": ("fiolake.cli.jobfiles", "profiles", "List the shipped fio profiles."),
    "sql": ("fiolake.cli.analysis", "sql", "Query the lake with SQL (DuckDB)."),
    "compare": ("fiolake.cli.comparisons", "compare", "Ratios of backends or runs, decided."),
    "trend": ("fiolake.cli.timeline", "trend", "A metric over time, change points marked."),
    "regressions": ("fiolake.cli.timeline", "regressions", "Change points for the worse."),
    "saturation": ("fiolake.cli.saturation", "saturation", "IOPS at a latency SLO, decided."),
    "env-diff": ("fiolake.cli.analysis", "env_diff", "How two runs' environments differ."),
    "lake": ("fiolake.cli.analysis", "lake", "Lake hygiene: compact, prune, check."),
    "app": ("fiolake.cli.app", "app", "Serve the Streamlit app (login beyond localhost)."),
    "publish": ("fiolake.cli.distributed", "publish", "Publish signed job manifests."),
    "runner": ("fiolake.cli.runner", "runner", "Pull jobs from the lake and run them."),
    "status": ("fiolake.cli.status", "status", "Progress of a campaign, or of recent ones."),
    "keygen": ("fiolake.cli.distributed", "keygen", "Create a local Ed25519 signing key."),
    "stack": ("fiolake.cli.stack", "stack", "Local MinIO (TLS) + OpenBao stack."),
    "gate": ("fiolake.cli.gate", "gate", "Exit 1 when a campaign is worse than its baseline."),
    "report": ("fiolake.cli.report", "report", "The gate's answer as one offline HTML file."),
}


# Commands whose exit 1 is a verdict, so every problem exits 2 instead: `gate` exits 1
# only for "worse than the baseline" (docs/ci.md), letting CI tell a regression from a
# broken pipeline ("nothing comparable" included).
EVERY_PROBLEM_IS_USAGE = frozenset({"gate"})
# Set in ctx.meta (shared by every context of one invocation) while a command does a part
# of its work whose every problem is a usage problem; see `problems_are_usage`.
_USAGE_PHASE = "fiolake.problems_are_usage"


@contextlib.contextmanager
def problems_are_usage() -> Iterator[None]:
    """Within this block any `FiolakeError` exits 2 with the command's usage line, as for a
    command in EVERY_PROBLEM_IS_USAGE. For a part of a command, not all of it: `report`
    asks the gate's question (a comparison that cannot be made is bad input, exit 2) and
    then writes a file (a failed write is a failure, exit 1).

    The block only marks; `LazyGroup.invoke` maps. The mark is cleared only when the block
    ends normally, so an error leaving it reaches the group with the mark still set.
    """
    meta = click.get_current_context().meta
    meta[_USAGE_PHASE] = True
    yield
    meta[_USAGE_PHASE] = False


# Commands that only read the lake and print. Once one has printed its answer nothing is
# left to write, so the process ends without the interpreter's teardown, which frees
# every object and module of numpy, scipy, pyarrow, pandas and DuckDB one by one: 0.1 s
# after the imports alone, 0.25 s after `compare` on a 100,000-run lake (BENCHMARKS.md,
# issue 24), all of it spent after the answer is out.
# `gate` too: its verdict is its exit code (1: worse), which ends the process the same way;
# its files (--junit, `gate accept`'s record) are written whole before it returns.
ENDS_AT_ONCE = frozenset(
    {"compare", "trend", "regressions", "sql", "env-diff", "saturation", "gate"}
)


ANSWERED = object()  # what LazyGroup.invoke returns after an ENDS_AT_ONCE command


def _end_now(code: int = 0) -> NoReturn:
    """Exit with `code` without the interpreter's teardown, logging and stdio flushed
    first. A reader that closed the pipe early (`| head`), or a process started without
    stdout, is no failure of the command: its code, no traceback."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):  # None when started without that descriptor
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):  # a closed pipe, a closed file
                stream.flush()
    os._exit(code)


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use, and the one place where
    library errors and missing extras become messages and exit codes."""

    # Whether the last command was an ENDS_AT_ONCE one that exited with a code (`gate`'s
    # 1: worse): click hands main() only the code, which then ends at once with it.
    exited_at_once = False

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; a `FiolakeError` from anywhere below becomes `fail(...)`.

        Output a command printed before the error (validate's `ok` lines, a run's summary)
        is already out: only the error line follows it.
        """
        self.exited_at_once = False
        try:
            result = super().invoke(ctx)
            if result is None and ctx.invoked_subcommand in ENDS_AT_ONCE:
                return ANSWERED  # main() ends the process at once
            return result
        except click.exceptions.Exit:  # `gate`'s verdict (1: worse)
            self.exited_at_once = ctx.invoked_subcommand in ENDS_AT_ONCE
            raise
        except FiolakeError as exc:
            in_phase = bool(ctx.meta.get(_USAGE_PHASE))  # a `problems_are_usage` block
            usage = in_phase or ctx.invoked_subcommand in EVERY_PROBLEM_IS_USAGE
            raise fail(exc, _failing_context(exc.__traceback__), usage=usage) from None
        except ModuleNotFoundError as exc:
            failing = _failing_context(exc.__traceback__) or ctx
            raise (missing_extra(exc, failing.command_path) or exc) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[cmd_name]
        try:
            return getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:  # the command's module needs an extra
            raise (missing_extra(exc, f"{ctx.command_path} {cmd_name}") or exc) from None

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


def fail(
    exc: FiolakeError, ctx: click.Context | None = None, *, usage: bool = False
) -> click.ClickException:
    """The click exception that shows `exc` as `Error: …` with its exit code.

    Exit 2 (UsageProblem, or `usage=True`) is a click.UsageError, which also prints the
    failing command's usage line when `ctx` names it, as click does for its own usage errors.
    """
    if usage or exc.exit_code == 2:
        return click.UsageError(str(exc), ctx)
    err = click.ClickException(str(exc))
    # click types exit_code as a ClassVar, yet reads it from the instance it catches.
    err.exit_code = exc.exit_code  # type: ignore[misc]
    return err


def _failing_context(tb: TracebackType | None) -> click.Context | None:
    """The innermost click context an error passed through: the (sub)command that failed.

    By the time the error reaches the group, click has left that command's context, and
    contexts link only to their parents; every click frame on the way names its own `ctx`.
    """
    found = None
    while tb is not None:
        ctx = tb.tb_frame.f_locals.get("ctx")
        if isinstance(ctx, click.Context):
            found = ctx
        tb = tb.tb_next
    return found


def main() -> None:
    """Console-script entry point: click errors become `Error: …` and exit codes (library
    errors reach here already mapped by `LazyGroup.invoke`)."""
    try:
        # Without standalone mode click *returns* the code of `raise Exit(n)`/`ctx.exit(n)`.
        code = cli.main(standalone_mode=False, prog_name="fiolake")
        if code is ANSWERED:
            _end_now()
        if isinstance(code, int) and code:
            if cli.exited_at_once:
                _end_now(code)
            sys.exit(code)
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
