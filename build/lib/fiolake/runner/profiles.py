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


def describe(text: str) -> str:
    """The first paragraph of a job file's leading comment lines, joined into one line."""
    words: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith(("#", ";")):
            break
        comment = stripped.lstrip("#;").strip()
        if not comment:
            if words:
                break
            continue
        words.append(comment)
    return " ".join(words)


def list_profiles() -> list[Profile]:
    """Every job_files/*.fio, sorted by name."""
    return [
        Profile(name=p.stem, path=p, description=describe(p.read_text(encoding="utf-8")))
        for p in sorted(PROFILES_DIR.glob("*.fio"))
    ]


def resolve_job_file(name_or_path: str | Path) -> Path:
    """An existing job file path as given, else the shipped profile of that name."""
    path = Path(name_or_path)
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
