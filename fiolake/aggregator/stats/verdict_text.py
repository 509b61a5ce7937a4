"""Verdicts in words, marks and colours: one vocabulary for the CLI, the app and the gate.

`mark` gives the table cell (▲ better, ▼ worse, = equivalent, inconclusive), `decider`
what would settle an inconclusive row at the observed effect: the repetitions per side
that would confirm a difference of the observed size (80 % power) and, separately, those
that would show equivalence within ±min-effect (docs/statistics.md, section 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

# The verdicts themselves live here, not in compare, so the CLI can name them cheaply.
BETTER, WORSE, EQUIVALENT, INCONCLUSIVE = "better", "worse", "equivalent", "inconclusive"
MIXED = "mixed"  # the landing page's profile whose cases got different verdicts
NOT_TESTED = "not tested"  # a ratio without a test (too few repetitions, no baseline)

# One colour per verdict for every chart (the app's Vega charts, the report's SVG), so a
# verdict looks the same wherever it is drawn. Diverging red-to-green with neutral greys.
VERDICT_COLOURS = {
    BETTER: "#1a9850",
    WORSE: "#d73027",
    EQUIVALENT: "#7f7f7f",
    INCONCLUSIVE: "#fdae61",
    MIXED: "#abd9e9",
    NOT_TESTED: "#d9d9d9",
}


class JudgedRow(Protocol):
    """What the words need of a judged row (compare.CompareRow has it; imported from here
    so that the CLI's --help need not load compare, which loads duckdb and pyarrow)."""

    @property
    def verdict(self) -> str: ...
    @property
    def ratio(self) -> float | None: ...
    @property
    def reps_to_confirm(self) -> int | None: ...
    @property
    def reps_for_equivalence(self) -> int | None: ...


MARKS = {BETTER: "▲ better", WORSE: "▼ worse", EQUIVALENT: "= equivalent"}
DECIDED = (BETTER, WORSE, EQUIVALENT)


def times(ratio: float) -> str:
    """A ratio in two significant digits: `6.3×`, `0.04×`, `160×`."""
    return f"{ratio:.2g}×" if ratio < 100 else f"{ratio:.0f}×"


def word(verdict: str) -> str:
    """The verdict of a judged row as one word; every undecided outcome is inconclusive."""
    return verdict if verdict in DECIDED else INCONCLUSIVE


def mark(verdict: str) -> str:
    """`▲ better`, `▼ worse`, `= equivalent`, or the verdict as it is (baseline, ...)."""
    return MARKS.get(verdict, verdict)


def decider(row: JudgedRow, min_effect: float) -> str:
    """What would decide an inconclusive row: `~4 runs per side would confirm 0.1×; ~40
    would show it within ±5 %` ('' when neither is within reach or the row is decided)."""
    if row.verdict != INCONCLUSIVE or row.ratio is None:
        return ""
    parts = []
    if row.reps_to_confirm is not None:
        parts.append(f"~{row.reps_to_confirm} runs per side would confirm {times(row.ratio)}")
    if row.reps_for_equivalence is not None:
        tail = "would" if parts else "runs per side would"
        parts.append(f"~{row.reps_for_equivalence} {tail} show it within ±{min_effect:.0%}")
    return "; ".join(parts)


def label(row: JudgedRow, min_effect: float, reason: str = "") -> str:
    """The verdict cell: `▲ better`, `= equivalent (within ±5%)`, or `inconclusive: ~4
    runs per side would confirm 0.1×`; with a `reason` (the gate's `host busy (outside
    CPU 45 %)`), `inconclusive: <reason>`."""
    if reason:
        return f"{INCONCLUSIVE}: {reason}"
    text = mark(row.verdict)
    if row.verdict == EQUIVALENT:
        text += f" (within ±{min_effect:.0%})"
    more = decider(row, min_effect)
    return f"{text}: {more}" if more else text


def host_busy_words(reasons: Sequence[str]) -> str:
    """The gate summary's clause for its host-busy rows (`stats.host_noise`): ` (2 of them
    host busy (outside CPU 45 %): a run was not alone)`, or '' when none."""
    busy = [r for r in reasons if r.startswith("host busy")]
    if not busy:
        return ""
    reasons = list(dict.fromkeys(busy))
    what = ", ".join(reasons) if len(reasons) <= 2 else "host busy (each row says how)"
    return f" ({len(busy)} of them {what}: a run was not alone)"
