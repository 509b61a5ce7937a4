"""Read fio job files (ini) into per-job option dicts, without trusting a byte of them.

Follows fio's own reading rules where they matter for safety: `;` and `#` start a comment
anywhere on a line, `[global]` applies to the sections after it, later options win, and
any section whose name starts with "global" is a global section to fio.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fiolake.errors import PolicyError
from fiolake.runner.policy.options import canonical_name

DOLLAR = "'$' expansion is not allowed (environment and arithmetic expansion run commands)"
MAX_NAME_CHARS = 200
_NAME_FORBIDDEN = "/:[]"


@dataclass(frozen=True)
class JobSection:
    """One fio job: its name and every option in effect ([global] merged in), canonical names."""

    name: str
    options: dict[str, str]  # flags as "1"


@dataclass(frozen=True)
class JobFile:
    """The jobs of a job file, in file order."""

    jobs: list[JobSection]

    def options_for(self, job_name: str) -> dict[str, str]:
        """A copy of the merged options of the job called `job_name` (KeyError if none)."""
        for job in self.jobs:
            if job.name == job_name:
                return dict(job.options)
        names = ", ".join(j.name for j in self.jobs)
        raise KeyError(f"no job named {job_name!r} (jobs: {names})")


@dataclass(frozen=True)
class Occurrence:
    """One `key[=value]` line as written, for messages that point at the user's text."""

    line: int
    section: str  # the header as written; "global" for [global]
    key: str  # as written
    name: str  # canonical option name (aliases resolved)
    value: str  # "1" for a bare flag
    tainted: bool  # the line holds a '$': its value is reported, never interpreted


@dataclass
class Scan:
    """Everything read from a job file: the jobs, each option occurrence, and the problems."""

    job: JobFile
    occurrences: list[Occurrence] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (line, message)


def name_problem(name: str) -> str | None:
    """Why `name` can't be a job name (they become file names), or None."""
    if not name:
        return "must not be empty"
    bad = [c for c in _NAME_FORBIDDEN if c in name]
    if bad:
        listed = ", ".join(repr(c) for c in bad)
        return f"must not contain {listed} (job names become file names)"
    if len(name) > MAX_NAME_CHARS:
        return f"longer than {MAX_NAME_CHARS} characters"
    return None


def _control_char(line: str) -> str | None:
    for ch in line:
        if (ord(ch) < 32 and ch != "\t") or ord(ch) == 127:
            return f"0x{ord(ch):02x}"
    return None


class _Reader:
    """Line-by-line state: the current section, the [global] options so far, the jobs."""

    def __init__(self) -> None:
        self.scan = Scan(job=JobFile(jobs=[]))
        self.section: str | None = None
        self.in_global = False
        self.global_opts: dict[str, str] = {}
        self.jobs: list[tuple[int, str, dict[str, str]]] = []  # (line, name, options)

    def problem(self, line: int, message: str) -> None:
        self.scan.problems.append((line, message))

    def header(self, n: int, body: str, tainted: bool) -> None:
        if not body.endswith("]"):
            self.problem(
                n, f"line {n}: '{body}': a section header must be '[name]' on its own line"
            )
            name = body[1:].strip()
        else:
            name = body[1:-1].strip()
        self.section = name
        self.in_global = name == "global"
        if self.in_global:
            return
        why = name_problem(name)
        if name.startswith("global"):
            why = "fio treats every name starting with 'global' as [global]; rename it"
        if why and not tainted:
            self.problem(n, f"[{name}] section name: {why}")
        self.jobs.append((n, name, dict(self.global_opts)))

    def option(self, n: int, body: str, tainted: bool) -> None:
        key, eq, value = body.partition("=")
        key, value = key.strip(), (value.strip() if eq else "1")
        if not key or any(c.isspace() for c in key):
            self.problem(n, f"line {n}: '{body}': expected key=value or a bare flag")
            return
        if self.section is None:
            self.problem(n, f"line {n}: {key}: option outside any [section]")
            return
        occ = Occurrence(n, self.section, key, canonical_name(key), value, tainted)
        self.scan.occurrences.append(occ)
        if tainted:
            return
        if occ.name == "name":
            # fio names a job by its header unless the section itself sets name=.
            why = name_problem(value)
            if why:
                self.problem(n, f"[{self.section}] name={value}: {why}")
            if self.in_global:
                return
        target = self.global_opts if self.in_global else self.jobs[-1][2]
        target[occ.name] = value

    def finish(self, last_line: int) -> Scan:
        sections = []
        seen: set[str] = set()
        for n, header, opts in self.jobs:
            name = opts.pop("name", header)
            if name in seen:
                self.problem(n, f"[{name}] duplicate job name; give each job its own name")
            seen.add(name)
            sections.append(JobSection(name=name, options=opts))
        if not sections:
            self.problem(last_line, "no job sections; add at least one [name] section")
        self.scan.job = JobFile(jobs=sections)
        self.scan.problems.sort(key=lambda p: p[0])
        return self.scan


def scan_job_file(text: str) -> Scan:
    """Read `text` line by line, collecting every syntax and lexical problem."""
    reader = _Reader()
    lines = text.removeprefix("\ufeff").split("\n")
    for n, raw in enumerate(lines, start=1):
        line = raw.removesuffix("\r")
        bad = _control_char(line)
        if bad:
            reader.problem(n, f"line {n}: control character {bad} is not allowed")
            continue
        stripped = line.strip()
        if not stripped or stripped[0] in ";#":
            continue
        tainted = "$" in line
        if tainted:
            reader.problem(n, f"line {n}: {DOLLAR}")
        body = re.split(r"[;#]", stripped, maxsplit=1)[0].strip()
        if body.startswith("["):
            reader.header(n, body, tainted)
        elif re.split(r"[\s=]", body, maxsplit=1)[0] == "include":
            where = f"[{reader.section}]" if reader.section is not None else f"line {n}:"
            reader.problem(n, f"{where} include: reads other files; not allowed")
        else:
            reader.option(n, body, tainted)
    return reader.finish(len(lines) + 1)


def parse_job_file(text: str) -> JobFile:
    """Parse a job file; PolicyError on bad syntax or text that can't be passed on safely.

    That covers include lines, '$', control characters and bad job names. It does not judge
    options: use `runner.policy.check.check_job_file` for that.
    """
    scan = scan_job_file(text)
    if scan.problems:
        raise PolicyError([message for _, message in scan.problems])
    return scan.job
