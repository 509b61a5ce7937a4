"""Which runs a gate sets its new campaign against: the baseline and its questions.

A baseline is a campaign the user names, the newest earlier one whose runs carry a label
(`label_sql`), every comparable run of a window before the new campaign (`window_runs`),
or else the newest accepted earlier campaign, else the newest earlier one
(`default_baseline`). Each becomes one question per backend (`Question`): the backend,
the runs to compare and, for a window, the two pools of run ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from fiolake.aggregator.lake.accepted import acceptances
from fiolake.aggregator.lake.lake import Lake, literals
from fiolake.aggregator.rows.envdiff import ENV_COLUMNS
from fiolake.aggregator.rows.filters import RunFilter, present, runs_columns, validate
from fiolake.aggregator.rows.series import fetch_rows
from fiolake.aggregator.stats import nights
from fiolake.aggregator.stats.runsets import NEW_WORKLOADS, SAME_WORKLOAD
from fiolake.errors import UsageProblem
from fiolake.timetext import as_utc, iso_utc, parse_time

# New campaign's comparable runs: its ok runs' (backend, workload) pairs.
_NEW_JOBS = f"""new AS ({NEW_WORKLOADS.format(where="campaign_id = ?")}),
               start AS (SELECT min(started_at) AS t0 FROM runs WHERE campaign_id = ?)"""


def default_baseline(
    lake: Lake,
    campaign: str,
    label: tuple[str, str] | None = None,
    found: Sequence[nights.Earlier] | None = None,
) -> str:
    """The newest campaign whose measured runs started before `campaign` and ran one of
    its workloads on one of its backends — the newest accepted one (`lake.accepted`)
    when there is one; with `label` (KEY, VALUE), the newest whose runs carry it
    (`label_sql`); UsageProblem when there is none. Without `label`, from `found`
    (`nights.earlier_campaigns`) when given."""
    if found and label is None:  # accepted first, then the newest last start
        return max((accepted, last, name) for _, name, _, last, accepted in found)[2]
    cond, args = label_sql(lake, *label) if label else ("true", [])
    # issue 34: without a label, an accepted campaign comes first (gate accept)
    first = "false" if label else f"r.campaign_id IN ({literals(['', *acceptances(lake)])})"
    found = fetch_rows(
        lake,
        f"""WITH {_NEW_JOBS}
           SELECT r.campaign_id FROM runs r JOIN new ON {SAME_WORKLOAD}
           WHERE {RunFilter().where("r")} AND r.campaign_id <> ?
             AND r.started_at < (SELECT t0 FROM start) AND {cond}
           GROUP BY r.campaign_id ORDER BY bool_or({first}) DESC, max(r.started_at) DESC
           LIMIT 1""",
        [campaign, campaign, campaign, *args],
    )
    if found:
        return str(found[0][0])
    if label:
        raise UsageProblem(
            f"no earlier campaign whose runs carry {label[0]}={label[1]} ran the jobs of "
            f"campaign '{campaign}' on its backends — check the label (`fiolake sql "
            "'SELECT DISTINCT labels FROM runs'` lists them) or give --baseline-campaign"
        )
    raise UsageProblem(
        f"no earlier campaign ran the jobs of campaign '{campaign}' on its backends: "
        "give --baseline-campaign"
    )


def label_sql(lake: Lake, key: str, value: str) -> tuple[str, list[str]]:
    """A condition on `runs r` for KEY=VALUE: the runner label KEY (`runner --label`) is
    VALUE; for an environment column (kernel, fs_type, …) also that column is VALUE or
    starts with it at a version boundary, so kernel=6.1 matches 6.1.0-18-amd64."""
    cond, args = "r.labels[?] = ?", [key, value]
    if key in ENV_COLUMNS and key in runs_columns(lake):
        col = f'CAST(r."{key}" AS VARCHAR)'
        cond += f" OR {col} = ? OR starts_with({col}, ?) OR starts_with({col}, ?)"
        args += [value, value + ".", value + "-"]
    return f"({cond})", args


def window_runs(lake: Lake, campaign: str, since: str) -> dict[str, list[str]]:
    """Per backend, the ok runs of the new campaign's workloads that started in the
    window from `since` (a duration back from the campaign's start, e.g. 7d, or an ISO
    date) up to the campaign's start (so none of its own); UsageProblem when none."""
    t0 = fetch_rows(lake, "SELECT min(started_at) FROM runs WHERE campaign_id = ?", [campaign])
    start = as_utc(t0[0][0])
    begin = parse_time(since, now=start)
    found = fetch_rows(
        lake,
        f"""WITH {_NEW_JOBS}
           SELECT r.backend, list(r.run_id ORDER BY r.run_id)
           FROM runs r JOIN new ON {SAME_WORKLOAD}
           WHERE r.status = 'ok'
             AND r.started_at >= ? AND r.started_at < (SELECT t0 FROM start)
           GROUP BY r.backend ORDER BY r.backend""",
        [campaign, campaign, begin],
    )
    if not found:
        raise UsageProblem(
            f"no comparable runs since:{since} before campaign '{campaign}' (from "
            f"{iso_utc(begin, 'minutes')} to {iso_utc(start, 'minutes')}): no successful run "
            "of its workloads on its backends in that window — widen the window "
            "(e.g. since:30d) or give --baseline-campaign"
        )
    return {str(b): [str(r) for r in ids] for b, ids in found}


# Per backend: the backend, the runs to compare and, for a window, the two pools of run ids.
Question = tuple[str, RunFilter, dict[str, list[str]] | None]


def window_questions(lake: Lake, campaign: str, since: str, name: str) -> list[Question]:
    """Per backend with comparable runs in the window: the window's runs (pool `name`)
    against the new campaign's ok runs of that backend (pool `campaign`)."""
    news = dict(
        fetch_rows(
            lake,
            "SELECT backend, list(run_id ORDER BY run_id) FROM runs "
            "WHERE campaign_id = ? AND status = 'ok' GROUP BY backend",
            [campaign],
        )
    )
    return [
        (str(b), RunFilter(backends=(b,)), {name: ids, campaign: news[b]})
        for b, ids in window_runs(lake, campaign, since).items()
    ]


def campaign_questions(lake: Lake, campaign: str, name: str) -> list[Question]:
    """Per backend with ok runs in both campaigns: the two campaigns' runs of it.
    UsageProblem when the baseline campaign `name` is unknown or is `campaign` itself."""
    validate(lake, RunFilter(campaign=name))
    if name == campaign:
        raise UsageProblem(f"campaign '{campaign}' is its own baseline: choose an earlier one")
    backends = [
        str(b)
        for (b,) in fetch_rows(
            lake,
            "SELECT DISTINCT backend FROM runs WHERE campaign_id = ? AND status = 'ok' AND "
            "backend IN (SELECT backend FROM runs WHERE campaign_id = ? AND status = 'ok')"
            " ORDER BY backend",
            [campaign, name],
        )
    ]
    present(lake, "backend", backends)  # read from runs: each comparison's check is known
    return [(b, RunFilter(campaigns=(name, campaign), backends=(b,)), None) for b in backends]
