"""Ids of campaigns, jobs and runs: one scheme each, made here and read back here.

A campaign id sorts by time (`c-YYYYMMDD-HHMMSS-xxxx`); a job id names its campaign,
profile, backend and repetition, so a runner can order open jobs by repetition from their
keys alone, without fetching their manifests; a run id (one attempt of a job) sorts by
time too (`r-YYYYMMDDTHHMMSS-xxxxxxxxxx`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from datetime import UTC, datetime

from fiolake import layout


def new_campaign_id(now: datetime | None = None) -> str:
    """A sortable, key-safe campaign id such as `c-20261122-014501-3fa9`."""
    now = now or datetime.now(UTC)
    return f"c-{now.astimezone(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def new_run_id(now: datetime | None = None) -> str:
    """A sortable, key-safe id for one run attempt, such as `r-20261122T014501-3fa9c0d1e2`."""
    now = now or datetime.now(UTC)
    return f"r-{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:10]}"


_MAX_ID = 128  # layout.check_id's limit


def new_job_id(
    campaign_id: str,
    profile: str,
    backend: str,
    repetition: int,
    *,
    gang: int | None = None,
    unique: bool = False,
) -> str:
    """The one job-id scheme: `<campaign>-<profile>-<backend>-r<rep>`, with `-g<N>` for a
    gang of N (so gang sizes of one campaign do not collide).

    A published job needs no more: publish never reuses a campaign, so the id is unique and
    names the manifest's key. `fiolake run --campaign X` may record into one campaign again
    and again while each job's commit is create-only, so its ids end in a random part too
    (`unique`). An id past 128 characters (a long campaign id) keeps its start and its
    `-r<rep>…` end, with a hash of the whole between, so it stays distinct and key-safe
    instead of being refused.
    """
    head = f"{campaign_id}-{layout.slug(profile, 40)}-{layout.slug(backend, 40)}"
    tail = f"-r{repetition}" + (f"-g{gang}" if gang is not None else "")
    if unique:
        tail += f"-{secrets.token_hex(4)}"
    job_id = head + tail
    if len(job_id) > _MAX_ID:
        # The hash replaces the end of the head, not the tail: the repetition stays
        # readable (`repetition_of`), so runners still take open jobs lowest first.
        digest = hashlib.sha256(job_id.encode()).hexdigest()[:12]
        room = _MAX_ID - len(tail) - len(digest) - 1
        job_id = f"{head[:room].rstrip('._-')}-{digest}{tail}"
    return layout.check_id("job id", job_id)


_REPETITION = re.compile(r"-r(\d+)(?:-g\d+)?$")


def repetition_of(job_id: str) -> int | None:
    """The repetition a job id from `new_manifest` names (`...-r<rep>[-g<N>]`), or None:
    a runner orders open jobs by it without fetching their manifests."""
    found = _REPETITION.search(job_id)
    return int(found.group(1)) if found else None
