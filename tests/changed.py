"""The test files a change can break, for `make test-changed` (the edit–test loop).

Written by hand: pytest-testmon traces coverage, which xdist's workers do not merge, and
pytest's `--lf` only reruns what failed. This reads the imports the code states (every
`import` and `from … import`, inside functions too: the CLI and the stages import lazily)
and the CLI's command table (a test that runs `fiolake gate` needs `fiolake.cli.gate`),
and chooses the test files that reach a changed module, directly or through others; a
changed conftest.py chooses every test below it, a changed test file itself, and the
files of the tests that failed last time (pytest's cache) join. A change to pyproject.toml
or the root conftest chooses everything (`-` printed alone).

    python -m tests.changed [BASE]   # changed since BASE (default HEAD), untracked too
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = {"pyproject.toml", "tests/conftest.py", "Makefile"}


def changed_files(base: str) -> list[str]:
    """Paths (from the repo root) changed since `base`, committed or not, and untracked."""

    def git(*args: str) -> set[str]:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
        return {line for line in out.stdout.splitlines() if line}

    return sorted(
        git("diff", "--name-only", base) | git("ls-files", "--others", "--exclude-standard")
    )


def _module(path: Path) -> str:
    dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return dotted.removesuffix(".__init__")


def _imported(tree: ast.AST, known: set[str]) -> set[str]:
    """The known modules a source imports (`from a import b` is `a.b` when that is one)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found & known


def _commands() -> dict[str, str]:
    """The CLI's command → module table, read from fiolake/cli/__init__.py's source."""
    text = (ROOT / "fiolake" / "cli" / "__init__.py").read_text()
    return dict(re.findall(r'^\s*"([a-z-]+)": \("(fiolake\.cli\.\w+)"', text, re.M))


@functools.cache
def graph() -> tuple[dict[str, set[str]], dict[str, Path]]:
    """module → modules it imports, and module → file, over fiolake/ and tests/.
    (fiolake/'s stage folders are symlinks to the top-level ones: walked once.)"""
    files = {
        _module(p): p
        for top in ("fiolake", "tests")
        for p in (ROOT / top).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    known = set(files)
    commands = _commands()
    deps: dict[str, set[str]] = {}
    for module, path in files.items():
        text = path.read_text()
        try:
            deps[module] = _imported(ast.parse(text), known)
        except SyntaxError:
            deps[module] = set()
        if module.startswith("tests."):  # `fiolake X` in a test reaches X's module
            deps[module] |= {
                m for c, m in commands.items() if re.search(rf"[\"']{c}[\"']|fiolake {c}\b", text)
            }
    return deps, files


def last_failed() -> set[str]:
    """Test files of the tests that failed in the last pytest run (pytest's own cache)."""
    cache = ROOT / ".pytest_cache" / "v" / "cache" / "lastfailed"
    try:
        return {nodeid.split("::", 1)[0] for nodeid in json.loads(cache.read_text())}
    except (OSError, ValueError):
        return set()


def select(changed: list[str]) -> list[str]:
    """The test files to run for `changed` (['-'] for everything)."""
    if EVERYTHING & set(changed):
        return ["-"]
    deps, files = graph()
    users: dict[str, set[str]] = defaultdict(set)
    for module, imported in deps.items():
        for dep in imported:
            users[dep].add(module)
    by_path = {str(p.relative_to(ROOT)): m for m, p in files.items()}
    reached = {by_path[c] for c in changed if c in by_path}
    todo = list(reached)
    while todo:  # everything that imports a changed module, directly or through others
        for user in users[todo.pop()] - reached:
            reached.add(user)
            todo.append(user)
    chosen = {
        str(files[m].relative_to(ROOT))
        for m in reached
        if m.startswith("tests.") and files[m].name.startswith("test_")
    }
    for path in changed:
        if path.startswith("tests/") and path.endswith("/conftest.py"):
            folder = ROOT / Path(path).parent
            chosen |= {str(p.relative_to(ROOT)) for p in folder.rglob("test_*.py")}
    chosen |= last_failed()
    return sorted(p for p in chosen if (ROOT / p).is_file())


def main() -> None:
    base = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    print("\n".join(select(changed_files(base))))


if __name__ == "__main__":
    main()
