"""BENCHMARKS.md reads in a minute and its commands run: the first table fits one screen,
every row is dated and placed (machine and load), and every command in the tables runs
at least as far as its `--help` (`make -n` for make targets, the files for pytest)."""

from __future__ import annotations

import io
import re
import runpy
import shlex
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.cli import cli

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "BENCHMARKS.md"
COLUMNS = ["figure", "goal", "value", "date", "machine · load", "command"]
PENDING = "to be measured"  # a row other work will fill: no date or machine yet
SCREEN_ROWS = 30
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
PYTHONS = {"python", ".venv/bin/python"}


def tables(text: str) -> list[list[dict[str, str]]]:
    """The Markdown tables before the method notes, each as its rows (column -> cell)."""
    current = text.split("\n## ", 1)[0]
    found, lines = [], []
    for line in [*current.splitlines(), ""]:
        if line.startswith("|"):
            lines.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
        elif lines:
            header, _, *rows = lines
            found.append([dict(zip(header, row, strict=True)) for row in rows])
            lines = []
    return found


def commands(cell: str) -> list[str]:
    """The shell commands in a command cell: each code span, split at `;` and `&&`."""
    spans = re.findall(r"`([^`]+)`", cell)
    return [c.strip() for span in spans for c in re.split(r";|&&", span) if c.strip()]


def _help_output(run: object, name: str) -> tuple[int, str]:
    """Run a script's `--help` in this process (as `python -m` / `python FILE` would):
    its exit code and what it printed."""
    out, argv = io.StringIO(), sys.argv
    sys.argv = [name, "--help"]
    try:
        with redirect_stdout(out):
            run()  # type: ignore[operator]
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except ImportError as exc:  # `python -m` of a module that is not there: exit 1
        code = 1
        out.write(str(exc))
    finally:
        sys.argv = argv
    return code, out.getvalue()


def _bench(module: str) -> str | None:
    code, out = _help_output(
        lambda: runpy.run_module(module, run_name="__main__", alter_sys=True), module
    )
    ok = code == 0 and out.startswith("usage:")
    return None if ok else f"python -m {module} --help: exit {code}\n{out}"


def _script(path: str) -> str | None:
    code, out = _help_output(lambda: runpy.run_path(str(ROOT / path), run_name="__main__"), path)
    return None if code == 0 and out.startswith("usage:") else f"{path} --help: exit {code}"


def _fiolake(words: list[str]) -> str | None:
    path = []
    for word in words:  # the subcommand path: words up to the first option or placeholder
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        path.append(word)
    result = CliRunner().invoke(cli, [*path, "--help"])
    return None if result.exit_code == 0 else f"fiolake {' '.join(path)} --help: {result.output}"


def _make(words: list[str]) -> str | None:
    done = subprocess.run(
        ["make", "-n", "-C", str(ROOT), *words], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return f"make -n {' '.join(words)}: {done.stderr.strip()}"
    scripts = sorted(set(re.findall(r"\b(tests/bench/\w+\.py)\b", done.stdout)))
    return next((p for p in map(_script, scripts) if p), None)


def _pytest(words: list[str]) -> str | None:
    paths, skip = [], False
    for word in words:
        if skip or word.startswith("-"):
            skip = word in {"-m", "-k"}  # options whose value follows
            continue
        paths.append(word.split("::")[0])
    missing = [p for p in paths if not (ROOT / p).exists()]
    return f"pytest: no {missing}" if missing or not paths else None


def problem(command: str) -> str | None:
    """Why `command` does not run as far as its help, or None when it does."""
    words = shlex.split(command)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value before a command
        words = words[1:]
    if not words:
        return f"no command in {command!r}"
    head, rest = words[0], words[1:]
    if head == "eval":  # eval "$(fiolake stack env)"
        inner = re.fullmatch(r"\$\((.*)\)", " ".join(rest))
        return problem(inner.group(1)) if inner else f"eval of what? {command!r}"
    if head in PYTHONS and rest[:1] == ["-m"] and len(rest) > 1:
        if rest[1] == "fiolake":
            return _fiolake(rest[2:])
        if rest[1].startswith("tests.bench."):
            return _bench(rest[1])
    if head == "fiolake":
        return _fiolake(rest)
    if head == "make":
        return _make(rest)
    if head == "pytest":
        return _pytest(rest)
    return f"not a command this test can check: {command!r}"


TABLES = tables(BENCHMARKS.read_text())
ROWS = [row for table in TABLES for row in table]
COMMANDS = sorted({(c, PENDING in r["value"]) for r in ROWS for c in commands(r["command"])})


def test_the_first_table_fits_one_screen() -> None:
    first = TABLES[0]
    assert list(first[0]) == COLUMNS
    assert 10 <= len(first) <= SCREEN_ROWS


def test_every_row_is_dated_placed_and_has_a_command() -> None:
    undated = [r["figure"] for r in ROWS if not DATE.match(r["date"]) and PENDING not in r["value"]]
    unplaced = [r["figure"] for r in ROWS if r["machine · load"] in {"", "—"} and r["date"] != "—"]
    pending_dated = [r["figure"] for r in ROWS if PENDING in r["value"] and r["date"] != "—"]
    commandless = [r["figure"] for r in ROWS if not commands(r["command"])]
    assert (undated, unplaced, pending_dated, commandless) == ([], [], [], [])


def test_each_figure_is_in_the_tables_once() -> None:
    figures = [r["figure"] for r in ROWS]
    assert sorted({f for f in figures if figures.count(f) > 1}) == []


@pytest.mark.parametrize(("command", "pending"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_every_command_in_the_tables_runs(command: str, pending: bool) -> None:
    found = problem(command)
    if found and pending:
        pytest.skip(f"{PENDING}, and not there yet: {found}")
    assert found is None, found


@pytest.mark.parametrize(
    "command",
    [
        "python -m tests.bench.no_such_bench",
        "make no-such-target",
        "fiolake no-such-command",
        'eval "$(fiolake no-such-command)"',
        "pytest -q tests/no_such_test.py",
        "podman images",
    ],
)
def test_a_command_that_does_not_run_is_caught(command: str) -> None:
    assert problem(command) is not None
