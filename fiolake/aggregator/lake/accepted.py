"""Accepted changes: a team's record, in the lake, that what a campaign changed is intended.

New firmware, a deliberate trade-off: `fiolake gate accept --campaign ID --reason TEXT`
writes `accepted/<campaign>.json` (`layout.accepted_key`) create-only, with who accepted
it, when and why (conbench #828: acknowledging a distribution change). From then on the
gate's default baseline is the newest accepted campaign before the new one
(`stats.baselines.default_baseline`), and a change point at an accepted campaign is shown
as accepted, not reported as a regression (`stats.regressions`, the Trends page).

On an S3 lake the record is written with the publisher role's keys (the role that
publishes campaigns may also accept them; docs/ci.md); the analyst role reads it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from fiolake import layout
from fiolake.aggregator.lake.lake import Lake
from fiolake.errors import AccessDenied, NotFound, PreconditionFailed, StoreError, UsageProblem
from fiolake.timetext import iso_utc

log = logging.getLogger("fiolake.aggregator")
MAX_REASON = 2000  # characters: a sentence or a paragraph, not a log


@dataclass(frozen=True)
class Acceptance:
    """Who accepted the change a campaign brought, when (UTC) and why."""

    campaign: str
    by: str
    at: str  # ISO 8601 UTC, seconds
    reason: str

    def words(self) -> str:
        """`accepted by ana@ci-1 at 2026-11-26T13:00Z: new firmware 2.1`."""
        return f"accepted by {self.by} at {self.at}: {self.reason}"


def accept(
    lake: Lake, campaign: str, reason: str, by: str, now: datetime | None = None
) -> Acceptance:
    """Record that `campaign`'s change is intended; UsageProblem for a bad id, an empty
    reason, or a campaign accepted before (naming who and when). The caller checks that
    the campaign has runs."""
    try:
        key = layout.accepted_key(campaign)
    except ValueError as err:
        raise UsageProblem(f"--campaign: {err}") from None
    reason = check_reason(reason)
    at = iso_utc(now or datetime.now(UTC), "seconds")
    record = Acceptance(campaign, by, at, reason)
    try:
        lake.store.put(key, json.dumps(asdict(record)).encode(), if_none_match=True)
    except AccessDenied as err:
        raise AccessDenied(
            f"cannot record the acceptance of campaign '{campaign}': {err} — accept with the "
            "publisher role's keys (only it may write accepted/; docs/ci.md)"
        ) from None
    except PreconditionFailed:
        earlier = acceptances(lake).get(campaign)
        who = f": {earlier.words()}" if earlier else ""
        raise UsageProblem(
            f"campaign '{campaign}' is already accepted{who} — nothing to do"
        ) from None
    return record


def check_reason(reason: str) -> str:
    """`reason` stripped; UsageProblem when empty or longer than MAX_REASON."""
    reason = reason.strip()
    if not reason or len(reason) > MAX_REASON:
        raise UsageProblem(
            f"--reason must say why the change is intended in 1 to {MAX_REASON} characters — "
            "e.g. --reason 'firmware 2.1: write cache off on purpose'"
        )
    return reason


def acceptances(lake: Lake) -> dict[str, Acceptance]:
    """Every accepted campaign -> its record; an unreadable record is logged and skipped."""
    found: dict[str, Acceptance] = {}
    try:
        keys = list(lake.store.list(layout.ACCEPTED_PREFIX))
    except NotFound:
        return {}
    for key in keys:
        campaign = layout.campaign_from_accepted_key(key)
        if campaign is None:
            continue
        try:
            doc = json.loads(lake.store.get(key)[0])
            found[campaign] = Acceptance(
                campaign, str(doc["by"]), str(doc["at"]), str(doc["reason"])
            )
        except (StoreError, ValueError, KeyError, TypeError) as err:
            log.warning("skipping unreadable %s: %s", key, err)
    return found
