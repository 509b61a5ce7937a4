"""The shipped fio profiles (job_files/, package data): list them, resolve a name or path."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from fiolake.errors import UsageProblem

# job_files/ is package data of `fiolake.job_files`: the same files in a checkout and in
# an installed wheel.
PROFILES_DIR = Path(str(files("fiolake.job_files")))

# ls1intum/storage-benchmarking's default suite, ~15 s each.
DEFAULT_SUITE = (
    "random-reads",
    "random-writes",
    "sequential-reads",
    "sequential-writes",
    "web-server-assets",
    "media-streaming",
)


@dataclass(frozen=True)
class Profile:
    """A shipped job file; description is its leading comment paragraph."""

    name: str
    path: Path
    description: str


# A line `# precondition: NAME` in a job file's leading comment block names the job that
# runs on its files before it is measured (a shipped profile, or a path relative to the
# job file). docs/usage.md, "Preconditioning".
PRECONDITION_KEY = "precondition:"


def _header(text: str) -> list[str]:
    """The leading comment lines of a job file, without their comment marks."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith(("#", ";")):
            break
        lines.append(stripped.lstrip("#;").strip())
    return lines


def describe(text: str) -> str:
    """The first paragraph of a job file's leading comment lines, joined into one line."""
    words: list[str] = []
    for comment in _header(text):
        if comment.lower().startswith(PRECONDITION_KEY):
            continue
        if not comment:
            if words:
                break
            continue
        words.append(comment)
    return " ".join(words)


def header_precondition(text: str) -> str | None:
    """The `# precondition: NAME` of a job file's leading comment block, or None."""
    for comment in _header(text):
        if comment.lower().startswith(PRECONDITION_KEY):
            name = comment[len(PRECONDITION_KEY) :].strip()
            if not name:
                raise UsageProblem(
                    "a job file's '# precondition:' line names no job — write "
                    "'# precondition: precondition-fill' (a profile or a job file path)"
                )
            return name
    return None


def list_profiles() -> list[Profile]:
    """Every job_files/*.fio, sorted by name."""
    return [
        Profile(name=p.stem, path=p, description=describe(p.read_text(encoding="utf-8")))
        for p in sorted(PROFILES_DIR.glob("*.fio"))
    ]


def resolve_job_file(name_or_path: str | Path, relative_to: Path | None = None) -> Path:
    """An existing job file path as given (a relative one taken from `relative_to` when
    that is given, else from the working directory), else the shipped profile of that name."""
    path = Path(name_or_path)
    if relative_to is not None and not path.is_absolute():
        path = relative_to / path
    if path.is_file():
        return path
    name = path.name.removesuffix(".fio")
    candidate = PROFILES_DIR / f"{name}.fio"
    if str(name_or_path) in (name, f"{name}.fio") and candidate.is_file():
        return candidate
    known = ", ".join(p.name for p in list_profiles())
    raise UsageProblem(
        f"no job file or profile named {str(name_or_path)!r} — give a path to a .fio file "
        f"or one of the shipped profiles: {known}"
    )
