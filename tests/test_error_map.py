"""Library errors become `Error: …` and an exit code in one place: the group's invoke.

Commands let `FiolakeError` propagate; `LazyGroup.invoke` maps it (exit 2 with the failing
command's usage line for usage problems, the error's own code otherwise), after whatever
the command already printed. The bad-input table checks every real command's message.
"""

from __future__ import annotations

import ast
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import fiolake.cli
from fiolake.cli import COMMANDS, EVERY_PROBLEM_IS_USAGE, cli, problems_are_usage
from fiolake.errors import FiolakeError, UsageProblem

# The only place in the CLI that may catch FiolakeError: the map itself. (Click parameter
# types catch the parsers' UsageProblem, their one error, to `self.fail` with it.)
ALLOWED = {("__init__.py", "invoke")}


def _handlers(path: Path) -> list[tuple[str, str]]:
    found = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ExceptHandler) and "FiolakeError" in ast.unparse(
                node.type or ast.Name("")
            ):
                found.append((path.name, fn.name))
    return found


def test_only_the_group_maps_library_errors() -> None:
    cli_dir = Path(fiolake.cli.__file__).parent
    found = [h for p in sorted(cli_dir.glob("*.py")) for h in _handlers(p)]
    assert found == [("__init__.py", "invoke")], found


@click.group()
def nested() -> None:
    """A test group standing in for `lake` or `stack`."""


@nested.command()
@click.option("--code", type=int, default=1)
@click.option("--asking", is_flag=True, help="Fail inside a `problems_are_usage` block.")
@click.option("--then", is_flag=True, help="Fail after such a block ended normally.")
def boom(code: int, asking: bool, then: bool) -> None:
    """Print a line, then fail with a library error."""
    click.echo("partial output")
    if asking or then:
        with problems_are_usage():
            if asking:
                raise FiolakeError("nothing to compare — give another baseline")
    raise (
        UsageProblem("bad thing — do the other thing")
        if code == 2
        else FiolakeError("it broke — fix it")
    )


@pytest.fixture
def with_nested(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COMMANDS, "nested", (__name__, "nested", "test group"))


@pytest.mark.usefixtures("with_nested")
def test_usage_problem_exits_2_with_the_failing_commands_usage() -> None:
    result = CliRunner().invoke(cli, ["nested", "boom", "--code", "2"])
    assert (result.exit_code, result.stdout) == (2, "partial output\n")
    assert result.stderr == (
        "Usage: cli nested boom [OPTIONS]\nTry 'cli nested boom --help' for help.\n\n"
        "Error: bad thing — do the other thing\n"
    )


@pytest.mark.usefixtures("with_nested")
def test_failure_exits_with_its_code_and_no_usage() -> None:
    result = CliRunner().invoke(cli, ["nested", "boom"])
    assert (result.exit_code, result.stdout) == (1, "partial output\n")
    assert result.stderr == "Error: it broke — fix it\n"


@pytest.mark.usefixtures("with_nested")
def test_a_verdict_command_exits_2_for_every_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fiolake.cli, "EVERY_PROBLEM_IS_USAGE", frozenset({"nested"}))
    result = CliRunner().invoke(cli, ["nested", "boom"])
    assert result.exit_code == 2
    assert result.stderr.endswith("\n\nError: it broke — fix it\n")
    assert "gate" in EVERY_PROBLEM_IS_USAGE


@pytest.mark.usefixtures("with_nested")
def test_a_usage_phase_exits_2_and_what_follows_it_keeps_its_code() -> None:
    """`report`: the gate's question that cannot be answered is bad input (exit 2); its
    failed write afterwards is a failure (exit 1)."""
    asking = CliRunner().invoke(cli, ["nested", "boom", "--asking"])
    assert (asking.exit_code, asking.stdout) == (2, "partial output\n")
    assert asking.stderr == (
        "Usage: cli nested boom [OPTIONS]\nTry 'cli nested boom --help' for help.\n\n"
        "Error: nothing to compare — give another baseline\n"
    )
    then = CliRunner().invoke(cli, ["nested", "boom", "--then"])
    assert (then.exit_code, then.stderr) == (1, "Error: it broke — fix it\n")
