"""A busy host is not a slower disk: gate rows whose runs were not alone cannot be `worse`.

The runner records per run why it was not alone (`runs.flags`: `cpu-busy` when other work
used more than a quarter of a core, `other-fio`, `steal`) and the figures behind them
(`runs.outside_cpu_pct`, `runs.steal_pct`). A CPU hog slows a CPU-bound job (fsync on
tmpfs) by 10–30 % while the disk is unchanged, so a `worse` (or an undecided) row with a
flagged run on either side is `inconclusive` with the reason, e.g. `host busy (outside CPU
45 %)` — the figure the busiest flagged run recorded — unless the change is bigger than
that contention could cause (`HostNoise.explains`: 1 + outside CPU, ×2 with another fio,
× (1 + steal)).
`better` and `equivalent` stand: a busy host slows runs down, it does not make them equal
or faster. The gate exits 0 on such rows with a warning unless `--host-noise fail`
(docs/ci.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from fiolake.aggregator.lake.lake import Lake, literals
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import fetch_rows
from fiolake.aggregator.stats.compare import CompareRow
from fiolake.aggregator.stats.verdict_text import INCONCLUSIVE, WORSE

# The flags that say the host, not the storage, may have set the pace.
HOST_FLAGS = ("cpu-busy", "other-fio", "steal")


@dataclass(frozen=True)
class HostNoise:
    """The flagged runs of one profile × workload, both sides together."""

    flags: tuple[str, ...]
    outside_cpu_pct: float | None  # the highest any flagged run recorded, % of one core
    steal_pct: float | None

    def explains(self) -> float:
        """The largest slowdown this much contention could cause, as a factor: a CPU-bound
        job sharing its core with the outside work (1 + outside CPU / 100 %), times 2 with
        another fio (half the core each), times (1 + steal / 100 %) for the CPU the
        hypervisor took (a first-order bound: a share s stolen slows by 1 / (1 − s))."""
        factor = 1.0 + (self.outside_cpu_pct or 0.0) / 100.0
        factor *= 2.0 if "other-fio" in self.flags else 1.0
        return factor * (1.0 + (self.steal_pct or 0.0) / 100.0)

    def reason(self) -> str:
        """`host busy (outside CPU 45 %)`, `host busy (another fio; steal 7 %)`."""
        return span_reason([self])


def span_reason(noises: Sequence[HostNoise]) -> str:
    """One reason for several flagged rows, each figure as the range their busiest runs
    recorded: `host busy (outside CPU 36–65 %)`; for one row, `HostNoise.reason`."""
    flags = sorted({f for n in noises for f in n.flags})
    cpu = [
        n.outside_cpu_pct for n in noises if "cpu-busy" in n.flags and n.outside_cpu_pct is not None
    ]
    steal = [n.steal_pct for n in noises if "steal" in n.flags and n.steal_pct is not None]
    parts = []
    if cpu:
        parts.append(f"outside CPU {_span(cpu)} %")
    if "other-fio" in flags:
        parts.append("another fio")
    if steal:
        parts.append(f"steal {_span(steal)} %")
    return f"host busy ({'; '.join(parts) or ', '.join(flags)})"


def _span(values: Sequence[float]) -> str:
    """`45` or `36–65`: the lowest and highest figure, whole percent."""
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    return low if low == high else f"{low}–{high}"


def busy_jobs(
    lake: Lake, filt: RunFilter, pools: Mapping[str, Sequence[str]] | None = None
) -> dict[tuple[str, str], HostNoise]:
    """(profile, workload) -> HostNoise of the flagged ok runs the gate compares:
    those of `filt` (the two campaigns on one backend) or, with `pools`, the pooled runs."""
    if pools:
        where = f"r.run_id IN ({literals([r for ids in pools.values() for r in ids])})"
    else:
        where = filt.where("r")
    return _busy(lake, where).get(None, {})


def busy_jobs_by_backend(
    lake: Lake, filt: RunFilter
) -> dict[str, dict[tuple[str, str], HostNoise]]:
    """`busy_jobs` of each backend of `filt`'s runs, in one query (the gate asked one a
    backend, ~10 ms each at 1,000,000 runs, issue 44)."""
    found = _busy(lake, filt.where("r"), by_backend=True)
    return {str(b): noise for b, noise in found.items()}


def _busy(
    lake: Lake, where: str, *, by_backend: bool = False
) -> dict[str | None, dict[tuple[str, str], HostNoise]]:
    """The flagged ok runs satisfying `where` (on runs aliased r): per backend (None for
    all when not `by_backend`), (profile, workload) -> HostNoise. The runs are chosen
    before their flags are unnested: unnesting a year's first took 60 ms of 70 at
    1,000,000 runs."""
    backend = "r.backend" if by_backend else "NULL"
    found = fetch_rows(
        lake,
        f"""SELECT {backend}, r.profile, coalesce(r.workload_sha256, ''),
                   list(DISTINCT f ORDER BY f), max(r.outside_cpu_pct), max(r.steal_pct)
            FROM (SELECT * FROM runs r WHERE {where} AND r.status = 'ok' AND len(r.flags) > 0)
                 AS r, unnest(r.flags) AS t(f)
            WHERE f IN ({literals(HOST_FLAGS)})
            GROUP BY ALL""",
        [],
    )
    out: dict[str | None, dict[tuple[str, str], HostNoise]] = {}
    for b, p, sha, f, cpu, st in found:
        out.setdefault(b, {})[(str(p), str(sha))] = HostNoise(tuple(f), cpu, st)
    return out


def judge(
    row: CompareRow, busy: Mapping[tuple[str, str], HostNoise]
) -> tuple[CompareRow, HostNoise | None]:
    """`row` and None when its runs were alone or its verdict stands; else the row made
    `inconclusive` and the noise that did it (its `reason()`: `host busy (outside CPU
    45 %)`). A change bigger than the busy host could explain (`HostNoise.explains`, at
    the observed ratio) stays `worse`: a disk 100× slower is not a CPU hog."""
    noise = busy.get((row.profile, row.workload_sha256 or ""))
    if noise is None or row.verdict not in (WORSE, INCONCLUSIVE):
        return row, None
    if row.verdict == WORSE and row.ratio and _factor(row.ratio) > noise.explains():
        return row, None
    return replace(row, verdict=INCONCLUSIVE), noise


def _factor(ratio: float) -> float:
    """How many times a ratio changed the value, either way (0.5× and 2× are 2)."""
    return math.exp(abs(math.log(ratio)))
