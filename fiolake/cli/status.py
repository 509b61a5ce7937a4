"""`fiolake status`: where a campaign's jobs stand, or a line per recent campaign."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from fiolake.cli import format_option, lake_option
from fiolake.cli.common import IdParam
from fiolake.cli.output import emit
from fiolake.commits import RERUNNABLE
from fiolake.errors import FiolakeError
from fiolake.units import MISSING

if TYPE_CHECKING:
    from fiolake.campaign_progress import CampaignSummary
    from fiolake.store import ObjectStore


@click.command()
@click.option(
    "--campaign", type=IdParam("campaign id"), help="Campaign id printed by `fiolake publish`."
)
@click.option(
    "--recent",
    type=click.IntRange(1),
    metavar="N",
    help="Instead: one line per campaign (jobs per state, the most frequent reason) for "
    "the N newest campaigns.",
)
@lake_option
@format_option()
def status(campaign: str | None, recent: int | None, lake: str, fmt: str) -> None:
    """Where every job of a campaign stands: pending (and why runners left it waiting,
    how long ago), running (by whom, lease age), stale-lease (and any reason left since
    its last claim), ok, failed, rejected or interrupted (with the reason). Counts and
    each distinct reason go to stderr.

    \b
    Examples:
      fiolake status --campaign c-20261123-070000-ab12
      fiolake status --recent 5          # counts per campaign, newest first
    """
    if campaign is not None and recent is not None:
        raise click.UsageError("--campaign and --recent exclude each other — pick one")
    if campaign is None and recent is None:
        raise click.UsageError(
            "Missing option '--campaign'. (Or --recent N for a line per recent campaign.)"
        )
    from fiolake.config import Settings

    store = Settings.from_env(lake=lake).store()
    if recent is not None:
        _recent(store, recent, fmt)
    else:
        _one(store, campaign or "", fmt)


def _one(store: ObjectStore, campaign: str, fmt: str) -> None:
    from fiolake.campaign_progress import campaign_status, summarize

    jobs = campaign_status(store, campaign)
    columns = ["job_id", "state", "runner", "run_id", "lease_age_s", "epoch", "reason"]
    columns.append("reason_age_s")  # how long ago a runner left the waiting reason
    rows = [[getattr(j, c) for c in columns] for j in jobs]
    age = lambda v: MISSING if v is None else f"{v:.0f}s"  # noqa: E731
    emit(columns, rows, fmt, {"lease_age_s": age, "reason_age_s": age})
    summary = summarize(campaign, jobs)
    _tell(summary)
    if any(j.state in RERUNNABLE for j in jobs):
        click.echo(f"re-run them: fiolake publish --rerun {campaign} [--status ...]", err=True)


def _tell(summary: CampaignSummary, *, counts: bool = True) -> None:
    """The counts per state, then each distinct reason, on stderr."""
    if counts:
        click.echo(summary.counts_text, err=True)
    for n, state, reason in summary.reasons:
        click.echo(f"  {n} {state}: {reason}", err=True)


def _recent(store: ObjectStore, n: int, fmt: str) -> None:
    from fiolake.campaign_progress import JOB_STATES, campaign_status, list_campaigns, summarize

    ids = list_campaigns(store)[:n]
    summaries = [summarize(c, campaign_status(store, c)) for c in ids]
    columns = ["campaign_id", "jobs", *JOB_STATES, "top_reason"]
    rows = [
        [s.campaign_id, s.jobs, *(s.counts[state] for state in JOB_STATES), s.top_reason]
        for s in summaries
    ]
    emit(columns, rows, fmt, {})
    if not ids:
        click.echo("no campaigns in this lake yet — publish one with `fiolake publish`", err=True)


# --wait reports progress when the counts change, and at least this often otherwise.
PROGRESS_EVERY_S = 60.0


# A poll waits at most this long for the host's benchmark to end (then polls anyway, so
# progress still shows during an hour-long job).
POLL_WAITS_FOR_FIO_S = 60.0


def _quiet_poll(seconds_left: float) -> Any:
    """Each poll of `publish --wait` between this host's fio runs (between_solo_runs),
    waiting for one at most a minute and never past the wait's deadline."""
    import os

    from fiolake.runner.host.lock import DEFAULT_PATH, ENV_VAR, between_solo_runs

    path = Path(os.environ.get(ENV_VAR) or DEFAULT_PATH)
    return between_solo_runs(path, max_s=min(POLL_WAITS_FOR_FIO_S, seconds_left))


def wait_for(campaign_id: str, timeout: float, lake: str) -> None:
    """`publish --wait`: progress on stderr until every job of the campaign is committed;
    exit 1 unless all are ok (or on timeout)."""
    import time

    from fiolake.campaign_progress import ENDED, wait_for_campaign
    from fiolake.config import Settings

    shown, shown_at = "", 0.0

    def progress(summary: CampaignSummary) -> None:
        nonlocal shown, shown_at
        line, now = summary.counts_text, time.monotonic()
        if line != shown or now - shown_at >= PROGRESS_EVERY_S:
            click.echo(f"campaign {campaign_id}: {line}", err=True)
            shown, shown_at = line, now

    store = Settings.from_env(lake=lake).store()
    summary = wait_for_campaign(
        store, campaign_id, timeout_s=timeout, on_progress=progress, around_poll=_quiet_poll
    )
    bad = sum(summary.counts[s] for s in ENDED if s != "ok")
    if bad:
        _tell(summary, counts=False)
        raise FiolakeError(
            f"campaign {campaign_id}: {bad} of {summary.jobs} job(s) did not succeed "
            f"({summary.counts_text}) — `fiolake status --campaign {campaign_id}` names "
            f"each; re-run them with `fiolake publish --rerun {campaign_id}`"
        )
