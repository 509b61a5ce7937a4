"""Which runs an analysis looks at: filters on `runs`, validated against the lake."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from fiolake.aggregator.lake.lake import Lake, literal, literals
from fiolake.errors import LakeError, UsageProblem
from fiolake.timetext import iso_utc


@dataclass(frozen=True)
class RunFilter:
    """Restrict an analysis to some committed runs (all given conditions must hold)."""

    campaign: str | None = None
    backends: tuple[str, ...] = ()
    profile: str | None = None
    runs: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    status: str | None = "ok"  # only successful runs carry comparable numbers
    campaigns: tuple[str, ...] = ()  # any of these (the gate: new and baseline campaign)

    def where(self, alias: str = "runs", *, any_role: bool = False) -> str:
        """A SQL condition on `runs` (aliased `alias`), its values written in as literals
        (`lake.literal`: binding them would make DuckDB import pandas).

        Measured runs only: a precondition run (runs.role, runner.precondition) prepared
        the files and is never compared, gated or trended; NULL (runs written before the
        column) means measured. `any_role` lists every run (the Runs page, gang views).
        """
        conds: list[str] = ["true"]
        if not any_role:
            conds.append(f"coalesce({alias}.role, 'measure') = 'measure'")
        if self.status is not None:
            conds.append(f"{alias}.status = {literal(self.status)}")
        if self.campaign is not None:
            conds.append(f"{alias}.campaign_id = {literal(self.campaign)}")
        if self.campaigns:
            conds.append(f"{alias}.campaign_id IN ({literals(self.campaigns)})")
        if self.backends:
            conds.append(f"{alias}.backend IN ({literals(self.backends)})")
        if self.profile is not None:
            conds.append(f"{alias}.profile = {literal(self.profile)}")
        if self.runs:
            conds.append(f"{alias}.run_id IN ({literals(self.runs)})")
        if self.since is not None:
            conds.append(f"{alias}.started_at >= {literal(self.since)}")
        if self.until is not None:
            conds.append(f"{alias}.started_at < {literal(self.until)}")
        return " AND ".join(conds)

    def describe(self) -> str:
        """The filter in words, for error messages."""
        parts = []
        if self.campaign is not None:
            parts.append(f"campaign '{self.campaign}'")
        parts += [f"campaign '{c}'" for c in self.campaigns]
        parts += [f"backend '{b}'" for b in self.backends]
        if self.profile is not None:
            parts.append(f"profile '{self.profile}'")
        parts += [f"run '{r}'" for r in self.runs]
        if self.since is not None:
            parts.append(f"since {iso_utc(self.since, 'minutes')}")
        if self.until is not None:
            parts.append(f"until {iso_utc(self.until, 'minutes')}")
        return ", ".join(parts) or "no filter"


def _absent(lake: Lake, checks: list[tuple[str, str]]) -> list[bool]:
    """For each (runs column, value): True when no committed run has it. One query for
    all the pairs not already known present (`Lake.present`), each an EXISTS that stops
    at its first row: a backend is in the first row group read, and a campaign's row
    groups are found by their statistics, where `bool_or` read a year's column (0.15 s
    of a trend over MinIO at 1,000,000 runs)."""
    unknown = [c for c in dict.fromkeys(checks) if c not in lake.present]
    if unknown:
        tests = ", ".join(
            f"EXISTS (SELECT 1 FROM runs WHERE {column} = {literal(value)})"
            for column, value in unknown
        )
        cur = lake.cursor()
        try:
            found = cur.execute(f"SELECT {tests}").fetchone() or ()
        finally:
            cur.close()
        lake.present.update(c for c, hit in zip(unknown, found, strict=False) if hit)
    return [c not in lake.present for c in checks]


def present(lake: Lake, column: str, values: Iterable[str]) -> None:
    """Record `values` of runs `column` as present, read from committed runs by the
    caller: `validate` then looks for none of them again (the gate's backends, issue 44)."""
    lake.present.update((column, str(v)) for v in values)


def validate(lake: Lake, filt: RunFilter) -> None:
    """LakeError naming the first filter value that matches no committed run."""
    checks = [("campaign_id", "campaign", filt.campaign), ("profile", "profile", filt.profile)]
    checks += [("campaign_id", "campaign", c) for c in filt.campaigns]
    checks += [("backend", "backend", b) for b in filt.backends]
    checks += [("run_id", "run", r) for r in filt.runs]
    given = [(column, word, value) for column, word, value in checks if value is not None]
    absent = _absent(lake, [(column, value) for column, _, value in given])
    for (column, word, value), missing in zip(given, absent, strict=True):
        if missing:
            raise LakeError(
                f"no committed runs match {word} '{value}' — see which exist: "
                f'fiolake sql "SELECT DISTINCT {column} FROM runs"'
            )


def runs_columns(lake: Lake) -> list[str]:
    """Columns of the `runs` view."""
    return [r[0] for r in lake.describe("runs")]


def check_group_column(lake: Lake, by: str) -> str:
    """`by` if it names a `runs` column usable for grouping, else a UsageProblem listing them."""
    valid = [c for c in runs_columns(lake) if c not in ("labels", "fio_argv")]
    if by not in valid:
        raise UsageProblem(f"cannot group by {by!r}: choose a runs column: {', '.join(valid)}")
    return by
