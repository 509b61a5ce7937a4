"""The regression gate: a campaign against a baseline campaign, decided by `compare`.

Per backend of the new campaign, its runs are set against the baseline campaign's runs of
that backend with `compare.compare` grouped by campaign — the one verdict function of
every surface — so a gate row has the numbers `compare` and the app show. Each backend
is its own question ("did backend X get slower?"): its family is that backend's tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from fiolake.aggregator.lake import columns
from fiolake.aggregator.lake.lake import Lake
from fiolake.aggregator.rows import night_rows
from fiolake.aggregator.rows.filters import RunFilter, validate
from fiolake.aggregator.stats import baselines, gate_config, host_noise, nights, stats
from fiolake.aggregator.stats.compare import (
    DEFAULT_METRICS,
    INCONCLUSIVE,
    WORSE,
    CompareRow,
    check_metrics,
    compare,
    question_metrics,
)
from fiolake.aggregator.stats.runsets import (
    BY_BACKEND_CAMPAIGN,
    summarise,
)
from fiolake.aggregator.stats.saturation import IOPS_AT_SLO, bounds_note, gate_rows
from fiolake.aggregator.stats.slo import DEFAULT_SLO, Slo, parse_slo
from fiolake.errors import UsageProblem


@dataclass(frozen=True)
class GateRow:
    """One backend × profile × job × direction × metric of the new campaign."""

    backend: str
    row: CompareRow  # group = the new campaign, against the baseline campaign
    reason: str = ""  # why a row is inconclusive beyond its numbers (`host busy (…)`)
    min_effect: float = stats.DEFAULT_MIN_EFFECT  # the row's own (fiolake-gate.toml)
    night: nights.NightModel | None = None  # the new night against earlier nights
    mde: float | None = None  # smallest drop it could have detected (80 % power), fraction
    noise: host_noise.HostNoise | None = None  # the flagged runs that made it inconclusive


@dataclass(frozen=True)
class GateResult:
    """The gate's answer: rows worst first, and the families they were adjusted in."""

    campaign: str
    baseline: str
    rows: list[GateRow]
    families: list[str]
    min_effect: float
    baseline_kind: str = "campaign"  # or "window": every comparable run of a window
    slo: Slo | None = None  # the SLO of iops_at_slo (the report's Saturation section too)
    config: gate_config.GateConfig | None = None  # the fiolake-gate.toml it read (gate_config)

    @property
    def worse(self) -> list[GateRow]:
        """Rows significantly worse than the baseline beyond min-effect."""
        return [g for g in self.rows if g.row.verdict == WORSE]

    @property
    def inconclusive(self) -> list[GateRow]:
        """Rows neither shown different nor shown equivalent."""
        return [g for g in self.rows if g.row.verdict == INCONCLUSIVE]

    def nights_words(self) -> str:
        """The footer's line on the night-to-night model and the minimum detectable effect."""
        known = [g.night for g in self.rows if g.night is not None]
        most = max((n.nights for n in known), default=0)
        mde = nights.mde_words([g.mde for g in self.rows])
        if most < nights.MIN_NIGHTS:
            where = next((n.words() for n in known), "baseline is one night")
        else:
            where = f"the new night against up to {most} earlier nights (campaign as the unit)"
        return where + (f"; smallest drop it could detect (80 % power): {mde}" if mde else "")

    @property
    def host_busy(self) -> list[GateRow]:
        """Rows made inconclusive because a run of either side was not alone (host_noise)."""
        return [g for g in self.rows if g.noise is not None]

    def host_busy_reason(self) -> str:
        """One reason for all host-busy rows: `host busy (outside CPU 36–65 %)`."""
        return host_noise.span_reason([g.noise for g in self.rows if g.noise is not None])

    def worst_host_busy(self) -> GateRow | None:
        """The host-busy row that moved furthest the worse way (its metric's direction),
        or None when there is none."""
        return max(self.host_busy, key=_slowdown, default=None)


def _slowdown(g: GateRow) -> float:
    """How far a row moved the worse way: log ratio, positive when worse."""
    if not g.row.ratio:
        return -math.inf
    change = math.log(g.row.ratio)
    return -change if columns.higher_is_better(g.row.metric) else change


def _ordered(rows: list[GateRow]) -> list[GateRow]:
    """Worse first, then inconclusive, each by size of change; near-equal sizes
    (`stats.size_classes`: a latency mirroring its IOPS) in the order of their names, so
    the same lake always prints the same table (the backends come from SQL in no fixed
    order)."""
    effects = [stats.effect_size(g.row.ratio) if g.row.ratio else 0.0 for g in rows]
    sizes = stats.size_classes(effects)
    rank = {WORSE: 0, INCONCLUSIVE: 1}
    keyed = [
        (rank.get(g.row.verdict, 2), -size, g.backend, g.row.profile, g.row.job_name,
         g.row.direction, g.row.metric, g.row.workload_sha256 or "", i)
        for i, (g, size) in enumerate(zip(rows, sizes, strict=True))
    ]  # fmt: skip
    return [rows[k[-1]] for k in sorted(keyed)]


def _judged(
    backend: str,
    row: CompareRow,
    busy: dict[tuple[str, str], host_noise.HostNoise],
    model: dict[nights.Key, nights.NightModel],
    effect: float,
) -> GateRow:
    """Issue 34: the night model's verdict (the campaign the unit), then host noise's veto."""
    night = model.get(nights.key(row))
    row, why = nights.judge(row, night, effect)
    row, noise = host_noise.judge(row, busy)
    mde = night.mde if night and night.mde is not None else nights.run_mde(row)
    # two bounds of IOPS at the SLO: the row says why it was not compared (issue 40)
    why = noise.reason() if noise else (bounds_note(row) or why)
    return GateRow(backend, row, why, effect, night, mde, noise)


def gate(
    lake: Lake,
    campaign: str,
    baseline: str | None = None,
    *,
    label: tuple[str, str] | None = None,
    since: str | None = None,
    metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS,
    min_effect: float = stats.DEFAULT_MIN_EFFECT,
    slo: Slo | None = None,
    config: gate_config.GateConfig | None = None,
) -> GateResult:
    """Set `campaign` per backend against one baseline: the campaign `baseline`; the
    newest earlier campaign whose runs carry `label` (KEY, VALUE); every comparable run
    of the window `since` before it (`baselines.window_runs`); or else
    `baselines.default_baseline`.

    UsageProblem when more than one is given, when the campaigns are the same, or when
    no row of the new campaign has a baseline row of the same backend and workload.
    With `config`, each row is judged at its own threshold (`gate_config.effect_of`).
    """
    if sum(x is not None for x in (baseline, label, since)) > 1:
        raise UsageProblem(
            "--baseline-campaign, --baseline-label and --baseline-runs each choose the "
            "baseline — give one of them"
        )
    validate(lake, RunFilter(campaign=campaign))
    default = baseline is None and label is None and since is None
    rows: list[GateRow] = []
    families: list[str] = []
    with ThreadPoolExecutor(2, thread_name_prefix="fiolake-gate") as pool:
        # The new campaign is summarised on a thread while its baseline and earlier nights
        # are found here: the part of the backends' one summary (`_summarise_together`)
        # that needs no baseline, which then asks the baseline's runs alone.
        ahead = None if since is not None else pool.submit(
            _summarise_ahead, lake, campaign, baseline, metrics
        )  # fmt: skip
        before = nights.earlier_campaigns(lake, campaign) if default else None
        if since is not None:
            name = f"since:{since}"
            asked = baselines.window_questions(lake, campaign, since, name)
        else:
            name = baseline or baselines.default_baseline(lake, campaign, label, before)
            asked = baselines.campaign_questions(lake, campaign, name)
        earlier = nights.earlier(lake, campaign, [(b, p) for b, _, p in asked], name, before)
        # The two campaigns' runs are summarised on a thread while the earlier nights'
        # logs are read here: two reads of different files, each waiting on the store part
        # of the time. Should the night summaries fail to answer, each backend's night
        # model folds its nights' runs itself (`nights.models`).
        nightly = _night_metrics(lake, earlier, metrics)
        together = pool.submit(_summarise_together, lake, campaign, asked,
                               {} if nightly else earlier, metrics, ahead)  # fmt: skip
        logs = _night_logs(lake, campaign, earlier, nightly) if nightly else None
        busy = _busy(lake, campaign, name, asked)
        together.result()

        # Then the backends two at a time: their power searches (scipy's ufuncs) and
        # queries run without the GIL (the gate 0.92× at 1,000,000 runs, issue 44).
        def one(question: baselines.Question) -> tuple[list[GateRow], list[str]]:
            backend = question[0]
            return _backend_rows(lake, campaign, question, earlier[backend], metrics,
                                 min_effect, slo, config, name=name, logs=logs,
                                 busy=busy[backend])  # fmt: skip

        for found, asked_in in pool.map(one, asked):
            rows += found
            families += asked_in
    if config is not None:
        gate_config.check_matched(config, [(g.backend, g.row) for g in rows])
    # two bounds of IOPS at the SLO were compared, only they cannot be told apart (issue 40)
    if not any(g.row.ratio is not None or bounds_note(g.row) for g in rows):
        raise UsageProblem(
            f"nothing comparable: campaign '{campaign}' and baseline '{name}' share no "
            "backend with the same workload and ≥ 2 successful runs on each side — "
            "run the same job files on the same backends, or choose another baseline"
        )
    kind = "window" if since is not None else "campaign"
    return GateResult(campaign, name, _ordered(rows), families, min_effect, kind, slo, config)


def _night_logs(
    lake: Lake,
    campaign: str,
    earlier: dict[str, list[str]],
    metrics: list[str],
) -> nights.NightLogs | None:
    """The night models' logs of `metrics` (`_night_metrics`) from the night summaries
    (`nights.night_logs`); None when they cannot answer after all (each backend's night
    model then folds its nights' runs)."""
    campaigns = sorted({campaign, *(c for found in earlier.values() for c in found)})
    return nights.night_logs(lake, sorted(earlier), campaigns, metrics)


def _night_metrics(
    lake: Lake, earlier: dict[str, list[str]], metrics: Sequence[str]
) -> list[str] | None:
    """The metrics the night models read from the night summaries (`_night_logs`): the
    plain ones (not iops_at_slo), checked; None — each backend's night model then folds
    its nights' runs — when there are none, no backend has MIN_NIGHTS earlier nights,
    or the summaries cannot answer (`night_rows.answers`)."""
    plain = [m for m in metrics if m != IOPS_AT_SLO]
    many = max(map(len, earlier.values()), default=0) >= nights.MIN_NIGHTS
    if not plain or not many:
        return None
    checked = check_metrics(lake, plain)
    return checked if night_rows.answers(lake, checked) else None


def _summarise_ahead(
    lake: Lake, campaign: str, baseline: str | None, metrics: list[str] | tuple[str, ...]
) -> None:
    """The new campaign's runs (and the baseline's, when named) on every backend,
    summarised as `_summarise_together` will ask and kept on the connection. At a
    million runs this took 0.17 s, which the default baseline's search
    (`nights.earlier_campaigns`) now hides; the baseline alone then took 0.09 s where
    both together took 0.27 s (issue 44)."""
    wanted = _summary_metrics(lake, metrics)
    if wanted:
        ahead = RunFilter(campaigns=tuple(c for c in (campaign, baseline) if c))
        summarise(lake, BY_BACKEND_CAMPAIGN, ahead, wanted)


def _summary_metrics(lake: Lake, metrics: list[str] | tuple[str, ...]) -> list[str]:
    """The metrics the backends' one summary holds (`question_metrics` of the plain ones,
    checked): what `_summarise_ahead` and `_summarise_together` both ask, so that the
    second takes the first's part (`runsets.summarise`). Empty without a plain metric."""
    plain = [m for m in metrics if m != IOPS_AT_SLO]
    return question_metrics(check_metrics(lake, plain)) if plain else []


def _summarise_together(
    lake: Lake,
    campaign: str,
    asked: list[baselines.Question],
    earlier: dict[str, list[str]],
    metrics: list[str] | tuple[str, ...],
    ahead: Future[None] | None = None,
) -> None:
    """One summary of the runs every backend's comparison and night model read (the new
    campaign, the baseline, the earlier nights), grouped by backend and campaign and kept
    on the connection: each backend then takes its part (`runsets.summarise`), one query
    where there was one a backend (each ~70 ms at 1,000,000 runs, issue 44). What
    `_summarise_ahead` (the future `ahead`) kept is taken as it is; should it have failed,
    everything is asked here (and fails here, as it would have)."""
    if ahead is not None:
        wait([ahead])
    if any(pools for _, _, pools in asked):
        return
    wanted = _summary_metrics(lake, metrics)
    if not wanted:
        return
    campaigns = {campaign} | {c for _, filt, _ in asked for c in filt.campaigns}
    campaigns |= {c for nights_of in earlier.values() for c in nights_of}
    backends = tuple(b for b, _, _ in asked)
    filt = RunFilter(backends=backends, campaigns=tuple(sorted(campaigns)))
    summarise(lake, BY_BACKEND_CAMPAIGN, filt, wanted)


def _busy(
    lake: Lake, campaign: str, name: str, asked: list[baselines.Question]
) -> dict[str, dict[tuple[str, str], host_noise.HostNoise]]:
    """Per backend of `asked`, its busy jobs (`host_noise.busy_jobs`): of the two
    campaigns' runs in one query, or of each backend's pooled runs."""
    if any(pools for _, _, pools in asked):
        return {b: host_noise.busy_jobs(lake, filt, pools) for b, filt, pools in asked}
    both = RunFilter(campaigns=(name, campaign), backends=tuple(b for b, _, _ in asked))
    found = host_noise.busy_jobs_by_backend(lake, both)
    return {b: found.get(b, {}) for b, _, _ in asked}


def _backend_rows(
    lake: Lake,
    campaign: str,
    question: baselines.Question,
    earlier: list[str],
    metrics: list[str] | tuple[str, ...],
    min_effect: float,
    slo: Slo | None,
    config: gate_config.GateConfig | None,
    *,
    name: str,
    logs: nights.NightLogs | None = None,
    busy: dict[tuple[str, str], host_noise.HostNoise],
) -> tuple[list[GateRow], list[str]]:
    """One backend's gate rows and the families they were adjusted in: every metric,
    iops_at_slo too (saturation.gate_rows), at each minimum effect the threshold file
    sets, judged against the `earlier` nights and the host's noise (`busy`; issue 34, 41)."""
    backend, filt, pools = question
    rows: list[GateRow] = []
    families: list[str] = []
    plain = [m for m in metrics if m != IOPS_AT_SLO]
    objective = slo or parse_slo(DEFAULT_SLO)
    for effect in config.effects(min_effect) if config else [min_effect]:
        found: list[CompareRow] = []
        models: dict[nights.Key, nights.NightModel] = {}
        if plain:
            # The night model first: its nights include the baseline campaign, so the
            # comparison's summary is part of its (`runsets.summarise` keeps it).
            models |= nights.models(lake, campaign, backend, earlier, plain, effect, logs)
            result = compare(lake, by="campaign_id", baseline=name, metrics=plain, filt=filt,
                             min_effect=effect, pools=pools)  # fmt: skip
            if effect == min_effect:
                families.append(result.family)
            found += [r for r in result.rows if r.group == campaign]
        if IOPS_AT_SLO in metrics:
            sweeps, family = gate_rows(lake, objective, filt, pools, baseline=name,
                                       campaign=campaign, min_effect=effect)  # fmt: skip
            if effect == min_effect:
                families.append(f"{backend}: {family}")
            found += sweeps
            models |= nights.slo_models(lake, campaign, backend, earlier, objective, effect)
        rows += [
            _judged(backend, r, busy, models, effect)
            for r in found
            if gate_config.effect_of(config, backend, r, min_effect) == effect
        ]
    return rows, families
