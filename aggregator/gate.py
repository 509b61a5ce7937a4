"""The regression gate: a campaign against a baseline campaign, decided by `compare`.

Per backend of the new campaign, its runs are set against the baseline campaign's runs of
that backend with `compare.compare` grouped by campaign — the one verdict function of
every surface — so a gate row has the numbers `compare` and the app show. Each backend
is its own question ("did backend X get slower?"): its family is that backend's tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from fiolake.aggregator import stats
from fiolake.aggregator.compare import (
    DEFAULT_METRICS,
    INCONCLUSIVE,
    WORSE,
    CompareRow,
    compare,
)
from fiolake.aggregator.filters import RunFilter, validate
from fiolake.aggregator.lake import Lake
from fiolake.aggregator.series import fetch_rows
from fiolake.errors import UsageProblem


@dataclass(frozen=True)
class GateRow:
    """One backend × profile × job × direction × metric of the new campaign."""

    backend: str
    row: CompareRow  # group = the new campaign, against the baseline campaign


@dataclass(frozen=True)
class GateResult:
    """The gate's answer: rows worst first, and the families they were adjusted in."""

    campaign: str
    baseline: str
    rows: list[GateRow]
    families: list[str]
    min_effect: float

    @property
    def worse(self) -> list[GateRow]:
        """Rows significantly worse than the baseline beyond min-effect."""
        return [g for g in self.rows if g.row.verdict == WORSE]

    @property
    def inconclusive(self) -> list[GateRow]:
        """Rows neither shown different nor shown equivalent."""
        return [g for g in self.rows if g.row.verdict == INCONCLUSIVE]


def default_baseline(lake: Lake, campaign: str) -> str:
    """The newest campaign started before `campaign` that ran one of its effective jobs on
    one of its backends; UsageProblem when there is none."""
    found = fetch_rows(
        lake,
        """WITH new AS (SELECT DISTINCT backend, effective_job_sha256 FROM runs
                        WHERE campaign_id = ? AND status = 'ok'),
                start AS (SELECT min(started_at) AS t0 FROM runs WHERE campaign_id = ?)
           SELECT r.campaign_id FROM runs r JOIN new USING (backend, effective_job_sha256)
           WHERE r.status = 'ok' AND r.campaign_id <> ?
             AND r.started_at < (SELECT t0 FROM start)
           GROUP BY r.campaign_id ORDER BY max(r.started_at) DESC LIMIT 1""",
        [campaign, campaign, campaign],
    )
    if not found:
        raise UsageProblem(
            f"no earlier campaign ran the jobs of campaign '{campaign}' on its backends: "
            "give --baseline-campaign"
        )
    return str(found[0][0])


def _order(g: GateRow) -> tuple[int, float]:
    rank = {WORSE: 0, INCONCLUSIVE: 1}.get(g.row.verdict, 2)
    size = stats.effect_size(g.row.ratio) if g.row.ratio else 0.0
    return rank, -size


def gate(
    lake: Lake,
    campaign: str,
    baseline: str | None = None,
    *,
    metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS,
    min_effect: float = stats.DEFAULT_MIN_EFFECT,
) -> GateResult:
    """Set `campaign` against `baseline` (default: `default_baseline`) per backend.

    UsageProblem when the campaigns are the same, or when no row of the new campaign has
    a baseline row of the same backend and effective job to be set against.
    """
    validate(lake, RunFilter(campaign=campaign))
    baseline = baseline or default_baseline(lake, campaign)
    validate(lake, RunFilter(campaign=baseline))
    if baseline == campaign:
        raise UsageProblem(f"campaign '{campaign}' is its own baseline: choose an earlier one")
    backends = [
        str(b)
        for (b,) in fetch_rows(
            lake,
            "SELECT DISTINCT backend FROM runs WHERE campaign_id = ? AND status = 'ok' "
            "AND backend IN (SELECT backend FROM runs WHERE campaign_id = ? AND status = 'ok')"
            " ORDER BY backend",
            [campaign, baseline],
        )
    ]
    rows: list[GateRow] = []
    families: list[str] = []
    for backend in backends:
        result = compare(
            lake,
            by="campaign_id",
            baseline=baseline,
            metrics=metrics,
            filt=RunFilter(campaigns=(baseline, campaign), backends=(backend,)),
            min_effect=min_effect,
        )
        families.append(result.family)
        rows += [GateRow(backend, r) for r in result.rows if r.group == campaign]
    if not any(g.row.ratio is not None for g in rows):
        raise UsageProblem(
            f"nothing comparable: campaign '{campaign}' and baseline '{baseline}' share no "
            "backend with the same effective job and ≥ 2 successful runs on each side — "
            "run the same job files on the same backends, or choose another baseline"
        )
    return GateResult(campaign, baseline, sorted(rows, key=_order), families, min_effect)
