"""The README, the manual in docs/ and --help stay true to the code."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from fiolake.cli import COMMANDS, cli
from fiolake.config import ENV_VARS
from fiolake.views import VIEWS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# Where examples and commands are documented: the README and the manual's pages.
PAGES = [README, *sorted(DOCS.glob("*.md"))]


def test_readme_starts_with_the_two_setup_commands() -> None:
    block = re.search(r"```\n(.*?)```", README.read_text(), re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


def test_readme_fits_on_a_screen_or_two() -> None:
    assert len(README.read_text().splitlines()) <= 160


def test_the_docs_index_links_every_page_and_every_link_resolves() -> None:
    index = (DOCS / "README.md").read_text()
    pages = sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md")
    assert [p for p in pages if f"]({p})" not in index] == []
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if not (page.parent / target).is_file():
                broken.append((page.relative_to(ROOT).as_posix(), target))
    assert broken == []


def test_the_layout_page_lists_every_view() -> None:
    text = (DOCS / "layout.md").read_text()
    assert [v for v in VIEWS if f"| `{v}` |" not in text] == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_with_a_description(name: str) -> None:
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ")
    assert len(result.output.splitlines()) > 3


def test_every_command_is_in_the_readme() -> None:
    text = README.read_text()
    assert [n for n in COMMANDS if f"fiolake {n}" not in text and f"`{n}`" not in text] == []


def test_the_configuration_table_is_every_variable_fiolake_reads() -> None:
    text = (DOCS / "usage.md").read_text()
    section = text[text.index("## Configuration") :]
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \| (.*) \|$", section, re.M)
    assert rows == list(ENV_VARS.items())


ENV_READ = re.compile(r"environ(?:\.get\(|\[)\"((?:FIOLAKE|AWS|VAULT)_[A-Z0-9_]+)")


def test_only_the_config_module_reads_fiolake_aws_and_vault_variables() -> None:
    root = ROOT
    readers = []
    for folder in ("fiolake", "runner", "aggregator", "app", "infra"):
        for path in (root / folder).rglob("*.py"):
            hits = re.findall(
                r"environ(?:\.get\(|\[)\"((?:FIOLAKE|AWS|VAULT)_[A-Z0-9_]+)", path.read_text()
            )
            if hits and path != root / "fiolake" / "config.py":
                readers.append((path.relative_to(root).as_posix(), hits))
    assert readers == []


EXAMPLE = re.compile(r"^\s*(fiolake [^\n#`]*)", re.M)


def examples() -> list[str]:
    """Command lines in the code blocks of the README and the manual."""
    blocks = [b for p in PAGES for b in re.findall(r"```[a-z]*\n(.*?)```", p.read_text(), re.S)]
    found = {line.strip().rstrip("&").strip() for b in blocks for line in EXAMPLE.findall(b)}
    return sorted(found)


@pytest.mark.parametrize("example", examples())
def test_every_documented_example_uses_options_its_help_lists(example: str) -> None:
    words = example.split()[1:]
    path = [w for w in words[:2] if not w.startswith("-")]
    group = cli
    command = []
    for word in path:  # walk into groups (`lake compact`, `stack up`)
        sub = group.get_command(None, word) if isinstance(group, click.Group) else None  # type: ignore[arg-type]
        if sub is None:
            break
        command.append(word)
        group = sub
    assert command, f"documented example names no fiolake command: {example}"
    helped = CliRunner().invoke(cli, [*command, "--help"])
    assert helped.exit_code == 0, helped.output
    flags = {w.split("=")[0] for w in words if w.startswith("--")}
    assert [f for f in sorted(flags) if f not in helped.output] == [], example
