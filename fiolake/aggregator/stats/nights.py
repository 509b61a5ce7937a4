"""Night-to-night spread in the gate: the campaign, not the repetition, is the unit.

Three runs a night share that night's conditions, so a night's offset is invisible in
the runs' spread: on quiet nights it is taken for signal (14 % slower, p 7e-5, and the
same disk), on noisy nights nothing is ever decided. When the lake holds earlier nights
(campaigns) of the same workload on the same backend, each is reduced to its mean
log value and the new night is tested against them with a one-way random-effects model
(log y_ij = μ + u_i + e_ij, u_i ~ N(0, τ²), e_ij ~ N(0, σ²)): σ² is the pooled
within-night variance, τ² the between-night variance by the ANOVA moment estimator
(var of the night means − σ²/n, floored at 0; the DerSimonian–Laird estimator for equal
n), and the new night's mean m is set against the history's mean m̄ of K nights with

    t = (m − m̄) / sqrt(τ² + σ²/n_new + s²/K),   K − 1 degrees of freedom

(s² the variance of the K night means): the prediction test of a new group under the
model (docs/statistics.md, section 11). Its p-values are Holm-adjusted across the
backend's rows like compare's; the verdict is `worse`/`better` when significant and
beyond the row's minimum effect, `equivalent` when the TOST within it is, else
`inconclusive`. The minimum detectable effect (80 % power at the row's α) is
(t_{1−α/2} + t_{0.8}) × the same standard error. With fewer than MIN_NIGHTS earlier
nights the run-level verdict of compare stands, and the row says its baseline is one
night and how many nights would make it trustworthy.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import duckdb

from fiolake.aggregator.lake import columns, summaries
from fiolake.aggregator.lake.accepted import acceptances
from fiolake.aggregator.lake.lake import Lake, literal, literals
from fiolake.aggregator.rows import night_rows
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import fetch_rows
from fiolake.aggregator.stats import stats
from fiolake.aggregator.stats.compare import SAME_TEST, CompareRow
from fiolake.aggregator.stats.groupstats import Case
from fiolake.aggregator.stats.runsets import (
    BY_CAMPAIGN,
    NEW_WORKLOADS,
    SAME_WORKLOAD,
    summarise,
)
from fiolake.aggregator.stats.saturation import night_values
from fiolake.aggregator.stats.slo import Slo
from fiolake.aggregator.stats.special import special
from fiolake.aggregator.stats.verdict_text import BETTER, EQUIVALENT, INCONCLUSIVE, WORSE
from fiolake.timetext import from_epoch_us

HISTORY = 10  # earlier nights in the model at most (the newest; none before an accepted one)
MIN_NIGHTS = 2  # earlier nights for a between-night variance
TRUSTED_NIGHTS = 10  # the recipe's history (docs/ci.md; tests/bench/gate_aa.py)
POWER = 0.8

Key = tuple[str, str, str, str | None, str]  # profile, job, direction, workload, metric
# (backend, campaign, case) -> metric -> the night's runs as logs (None: a value ≤ 0)
NightLogs = dict[tuple[str, str, Case], dict[str, stats.LogSummary | None]]
# backend, campaign, its first and last start (epoch µs), whether it is accepted
# (`lake.accepted`)
Earlier = tuple[str, str, int, int, bool]


@dataclass(frozen=True)
class NightModel:
    """The new night against the earlier nights, for one gate row."""

    nights: int  # earlier nights (campaigns) with this job on this backend
    ratio: float | None  # new night's geometric mean / the history's (exp(m − m̄))
    between_sd: float | None  # τ: night-to-night SD of the log means
    within_sd: float | None  # σ: pooled SD of the runs within a night (logs)
    p_value: float | None
    p_adjusted: float | None
    p_equivalence: float | None
    p_equivalence_adjusted: float | None
    mde: float | None  # smallest change (fraction, e.g. 0.12) detectable at 80 % power

    def words(self) -> str:
        """`night-to-night: 0.93× vs 6 earlier nights (they differ by ±4 %)`."""
        if self.nights < MIN_NIGHTS or self.ratio is None:
            return (
                f"baseline is one night: ≥ {MIN_NIGHTS} earlier nights of this job on this "
                f"backend measure night-to-night spread, ~{TRUSTED_NIGHTS} make it trustworthy"
            )
        spread = f"±{math.expm1(self.between_sd or 0.0):.0%}"
        return f"{self.ratio:.2f}× vs {self.nights} earlier nights (they differ by {spread})"


def earlier_campaigns(lake: Lake, campaign: str) -> list[Earlier]:
    """Each campaign whose measured ok runs started before `campaign`'s first and ran one
    of its workloads on the same backend, per backend: (backend, campaign, first start,
    last start (epoch µs), accepted). The default baseline
    (`baselines.default_baseline`) and the night history (`histories`) both come from it.
    It reads the night summaries (`night_rows.partial_rows`, runs not compacted folded
    from their runs) instead of every run's start (0.17 of the gate's 1.2 s at 1,000,000
    runs, issue 44), once: a campaign the new one's first start cuts through has its
    last start before it taken from its runs. The runs when the summaries cannot answer:
    the same answer, except that a run with no result rows is in no summary."""
    ((start,),) = fetch_rows(
        lake, "SELECT epoch_us(min(started_at)) FROM runs WHERE campaign_id = ?", [campaign]
    )
    if start is None:  # no run of it has a start: nothing started before it
        return []
    until = from_epoch_us(start)
    window = RunFilter(until=until)
    found = None
    with contextlib.suppress(duckdb.IOException):  # a summaries file gone: read the runs
        partial = night_rows.partial_rows(lake, RunFilter(), ())
        if partial is not None:
            before = f"(SELECT * FROM ({partial}) WHERE min_at < {literal(until)})"
            found = _campaign_spans(lake, campaign, before, "min_at", "max_at")
    if found is None:
        found = _campaign_spans(lake, campaign, _runs(window), "started_at", "started_at")
    elif cut := sorted({c for _, c, _, last in found if last >= start}):
        # a summary's last start is past the new campaign's first: its runs before it
        exact = _campaign_spans(
            lake, campaign, _runs(replace(window, campaigns=tuple(cut))), "started_at",
            "started_at",
        )  # fmt: skip
        spans = {(b, c): (first, last) for b, c, first, last in exact}
        found = [(b, c, *spans.get((b, c), (f, t))) for b, c, f, t in found]
    accepted = acceptances(lake) if found else {}
    return [(str(b), str(c), first, last, c in accepted) for b, c, first, last in found]


def _runs(filt: RunFilter) -> str:
    """The runs `filt` selects, as a relation."""
    return f"(SELECT * FROM runs r WHERE {filt.where('r')})"


def _campaign_spans(
    lake: Lake, campaign: str, rows: str, first: str, last: str
) -> list[tuple[str, str, int, int]]:
    """Per backend and campaign other than `campaign` in relation `rows` (runs, or
    partial night summaries) that ran one of `campaign`'s workloads on that backend:
    the least `first` and greatest `last` of its rows, in epoch µs."""
    return fetch_rows(
        lake,
        f"""WITH new AS ({NEW_WORKLOADS.format(where="campaign_id = ?")})
           SELECT r.backend, r.campaign_id, epoch_us(min(r.{first})), epoch_us(max(r.{last}))
           FROM {rows} r JOIN new ON {SAME_WORKLOAD}
           WHERE r.campaign_id <> ? GROUP BY 1, 2""",
        [campaign, campaign],
    )


def histories(found: Sequence[Earlier]) -> dict[str, list[str]]:
    """Per backend of `found` (`earlier_campaigns`): its newest HISTORY campaigns, none
    before the newest accepted one, oldest first."""
    out: dict[str, list[tuple[str, bool]]] = {}
    for backend, name, _, _, accepted in sorted(found, key=lambda e: (e[0], e[2], e[1])):
        out.setdefault(backend, []).append((name, accepted))
    newest: dict[str, list[str]] = {}
    for backend, named in out.items():
        start = max((i for i, (_, accepted) in enumerate(named) if accepted), default=0)
        newest[backend] = [name for name, _ in named[start:][-HISTORY:]]
    return newest


def earlier(
    lake: Lake, campaign: str, asked: Sequence[tuple[str, dict[str, list[str]] | None]],
    baseline: str, found: Sequence[Earlier] | None,
) -> dict[str, list[str]]:  # fmt: skip
    """Per backend of `asked` (backend, its pools or None): the earlier nights the gate's
    new night is set against — the window's campaigns (`--baseline-runs`), the recent
    history (`histories` of `found`) for the default baseline, or the one baseline
    campaign the user chose (`found` None)."""
    recent = histories(found) if found is not None else {}
    out: dict[str, list[str]] = {}
    for backend, pools in asked:
        if pools:
            rows = fetch_rows(
                lake,
                f"SELECT campaign_id FROM runs WHERE run_id IN ({literals(pools[baseline])}) "
                "GROUP BY 1 ORDER BY min(started_at), 1",
            )
            out[backend] = [str(c) for (c,) in rows][-HISTORY:]
        else:
            out[backend] = recent.get(backend, []) if found is not None else [baseline]
    return out


def night_logs(
    lake: Lake, backends: Sequence[str], campaigns: Sequence[str], metrics: Sequence[str]
) -> NightLogs | None:
    """Each night's runs of each case as logs, from the night summaries compaction keeps
    (`night_rows`: the runs not compacted folded from the views), merged exactly (counts;
    mean and M2 by Chan et al.'s update): what `runsets.summarise` gives as `log`, to
    rounding, without folding every run of the nights again (the gate's ten earlier
    nights were 0.45 s of its 1.5 s at 1,000,000 runs, issue 44). None when the
    summaries cannot answer (`night_rows.partial_rows`)."""
    filt = RunFilter(backends=tuple(backends), campaigns=tuple(campaigns))
    try:
        partial = night_rows.partial_rows(lake, filt, metrics)
    except duckdb.IOException:  # a summaries file gone behind its record: fold the runs
        return None
    if partial is None:
        return None
    keys = "backend, campaign_id, profile, job_name, direction, sha"
    mus, folded = [], []
    for m in metrics:
        c = summaries.metric_columns(m)
        n = f'("{c["count"]}" - "{c["nonpositive"]}")'  # the values with a log
        mean, m2 = summaries.chan_merge(n, f'"{c["log_mean"]}"', f'"{c["log_m2"]}"', f'"mu_{m}"')
        mus.append(f'{mean} AS "mu_{m}"')
        folded.append(f'sum("{c["count"]}"), sum("{c["nonpositive"]}"), any_value("mu_{m}"), {m2}')
    try:
        rows = fetch_rows(
            lake,
            f"""WITH p AS (
                   SELECT *, coalesce(workload_sha256, '') AS sha FROM ({partial})
                   WHERE profile IS NOT NULL AND job_name IS NOT NULL AND direction IS NOT NULL
               ), w AS (SELECT *, {", ".join(mus)} FROM p WINDOW k AS (PARTITION BY {keys}))
               SELECT {keys}, {", ".join(folded)} FROM w GROUP BY {keys}""",
        )
    except duckdb.IOException:  # a summaries file gone behind its record: fold the runs
        return None
    out: NightLogs = {}
    for row in rows:
        backend, campaign, profile, job, direction, sha = row[:6]
        logs: dict[str, stats.LogSummary | None] = {}
        for i, metric in enumerate(metrics):
            count, bad, mean, m2 = row[6 + 4 * i : 10 + 4 * i]
            good = bool(count) and not bad and mean is not None
            var = m2 / (count - 1) if good and count > 1 else None
            logs[metric] = stats.LogSummary(int(count), float(mean), var) if good else None
        out[(str(backend), str(campaign), (profile, job, direction, sha or None))] = logs
    return out


def key(row: CompareRow) -> Key:
    """A gate row's key in `models`."""
    return (row.profile, row.job_name, row.direction, row.workload_sha256, row.metric)


def models(
    lake: Lake,
    campaign: str,
    backend: str,
    nights: Sequence[str],
    metrics: Sequence[str],
    min_effect: float,
    logs: NightLogs | None = None,
) -> dict[Key, NightModel]:
    """Per row key of `campaign` on `backend`: its night model against `nights`, the
    p-values Holm-adjusted across the backend's rows (throughput counted once). The
    nights' logs come from `logs` (`night_logs`) when given, else from their runs."""
    if logs is None:
        filt = RunFilter(backends=(backend,), campaigns=(*nights, campaign))
        data = summarise(lake, BY_CAMPAIGN, filt, list(metrics))
        logs = {
            (backend, group, case): {m: g.log for m, g in by_metric.items()}
            for (group, case), by_metric in data.items()
        }
    out: dict[Key, NightModel] = {}
    for (b, group, case), by_metric in logs.items():
        if (b, group) != (backend, campaign):
            continue
        for metric in metrics:
            if metric not in by_metric:
                continue
            earlier = [logs[(backend, n, case)].get(metric) for n in nights
                       if (backend, n, case) in logs]  # fmt: skip
            new = by_metric[metric]
            out[(*case, metric)] = night_model(new, [e for e in earlier if e], min_effect)
    return _adjusted(out)


def slo_models(
    lake: Lake,
    campaign: str,
    backend: str,
    nights: Sequence[str],
    slo: Slo,
    min_effect: float,
) -> dict[Key, NightModel]:
    """`models` for iops_at_slo: each night's runs' own IOPS at `slo` per load sweep
    (saturation.night_values), Holm-adjusted across the backend's sweeps."""
    filt = RunFilter(backends=(backend,), campaigns=(*nights, campaign))
    values = night_values(lake, slo, filt)
    out: dict[Key, NightModel] = {}
    for (group, key), new in values.items():
        if group != campaign or not new:
            continue
        earlier = [stats.LogSummary.of(values[(n, key)]) for n in nights if values.get((n, key))]
        out[key] = night_model(stats.LogSummary.of(new), earlier, min_effect)
    return _adjusted(out)


def night_model(
    new: stats.LogSummary | None, earlier: list[stats.LogSummary], min_effect: float
) -> NightModel:
    parts = [s for s in (*earlier, new) if s is not None and s.var is not None and s.n > 1]
    dof = sum(s.n - 1 for s in parts)
    within = sum((s.n - 1) * (s.var or 0.0) for s in parts) / dof if dof else None
    k = len(earlier)
    if new is None or within is None or k < MIN_NIGHTS:
        return NightModel(k, None, None, math.sqrt(within) if within else None,
                          None, None, None, None, None)  # fmt: skip
    means = [s.mean for s in earlier]
    centre = sum(means) / k
    spread = sum((m - centre) ** 2 for m in means) / (k - 1)  # s²: var of the night means
    n_h = k / sum(1 / s.n for s in earlier)  # harmonic mean of the runs per night
    tau2 = max(0.0, spread - within / n_h)
    se = math.sqrt(tau2 + within / new.n + spread / k) or 1e-12
    diff, df = new.mean - centre, k - 1
    p = 2.0 * float(special.stdtr(df, -abs(diff) / se))
    bound = math.log1p(min_effect)
    p_tost = max(float(special.stdtr(df, -(diff + bound) / se)),
                 float(special.stdtr(df, (diff - bound) / se)))  # fmt: skip
    return NightModel(k, math.exp(diff), math.sqrt(tau2), math.sqrt(within), p, None, p_tost,
                      None, _mde(se, df, stats.ALPHA))  # fmt: skip


def _mde(se: float, df: float, alpha: float) -> float:
    """The smallest drop (fraction) found with POWER at two-sided `alpha`."""
    reach = (float(special.stdtrit(df, 1 - alpha / 2)) + float(special.stdtrit(df, POWER))) * se
    return -math.expm1(-reach)


def run_mde(row: CompareRow) -> float | None:
    """Without night history: the smallest drop the runs' test could find (80 % power at
    the row's family α, Bonferroni as `compare`'s runs needed), nights assumed alike."""
    if row.sd_log is None or row.n < 2 or row.n_baseline < 2:
        return None
    se = row.sd_log * math.sqrt(1 / row.n + 1 / row.n_baseline)
    return _mde(se, row.n + row.n_baseline - 2, stats.ALPHA / max(1, row.family_tests))


def mde_words(values: Sequence[float | None]) -> str:
    """`9–14 %` over the rows' minimum detectable effects ('' when none)."""
    known = sorted(v for v in values if v is not None)
    if not known:
        return ""
    low, high = f"{known[0]:.0%}", f"{known[-1]:.0%}"
    return low if low == high else f"{low.rstrip('%')}–{high}"


def _adjusted(out: dict[Key, NightModel]) -> dict[Key, NightModel]:
    """Holm across the rows with a test; bandwidth and IOPS of one case are one test."""
    tests: dict[tuple[object, ...], list[Key]] = {}
    for key, m in out.items():
        if m.p_value is not None:
            tests.setdefault((*key[:4], SAME_TEST.get(key[4], key[4])), []).append(key)
    groups = list(tests.values())
    for attr, to in (("p_value", "p_adjusted"), ("p_equivalence", "p_equivalence_adjusted")):
        firsts = [getattr(out[g[0]], attr) for g in groups]
        for members, p in zip(groups, stats.adjust(firsts, "holm"), strict=True):
            for key in members:
                out[key] = replace(out[key], **{to: p})  # type: ignore[arg-type]
    return out


def judge(row: CompareRow, model: NightModel | None, min_effect: float) -> tuple[CompareRow, str]:
    """The row's verdict from its night model when it has one (the campaign the unit),
    and why it is inconclusive; else the row as compare judged it."""
    if model is None or model.p_adjusted is None or model.ratio is None:
        return row, ""
    higher = columns.higher_is_better(row.metric)
    verdict = INCONCLUSIVE
    if model.p_adjusted < stats.ALPHA and stats.effect_size(model.ratio) > min_effect:
        verdict = BETTER if (model.ratio > 1.0) == higher else WORSE
    elif (model.p_equivalence_adjusted or 1.0) < stats.ALPHA:
        verdict = EQUIVALENT
    why = f"night-to-night: {model.words()}" if verdict == INCONCLUSIVE else ""
    return replace(row, verdict=verdict), why
