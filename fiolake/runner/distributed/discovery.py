"""Finding open work: this backend's jobs without a commit marker, in O(open jobs).

The key layout (`fiolake.layout`) keys manifests by backend and campaign, and a runner
writes a done marker once every job of a campaign is committed for its backend, so a
fresh runner never walks committed history (issue "scale").
"""

from __future__ import annotations

import builtins
import json
import logging
import random
from collections.abc import Iterable

from fiolake import layout
from fiolake.errors import PreconditionFailed, StoreError
from fiolake.ids import repetition_of
from fiolake.store import ObjectStore
from fiolake.timetext import now_iso

log = logging.getLogger("fiolake.runner")


def _manifests(keys: Iterable[str]) -> list[tuple[str, str, str]]:
    """(campaign_id, job_id, key) of the manifests among listed `keys` (others skipped)."""
    found = []
    for key in keys:
        try:
            campaign_id, job_id = layout.parse_job_key(key)
        except ValueError:
            continue
        found.append((campaign_id, job_id, key))
    return found


class OpenJobs:
    """One runner's view of open jobs; remembers what it has seen committed."""

    def __init__(self, store: ObjectStore, backend: str, runner_id: str):
        self.store, self.backend, self.runner_id = store, backend, runner_id
        self._done: set[str] = set()  # job ids known to be committed (never re-HEADed)
        self._done_campaigns: set[str] = set()  # campaigns with every job committed

    def committed(self, job_id: str) -> None:
        """Remember a job this runner saw committed."""
        self._done.add(job_id)

    def list(self) -> list[tuple[str, str, str]]:
        """(campaign_id, job_id, key) of this backend's jobs without a commit marker, lowest
        repetition first (`ids.repetition_of`: repetitions run interleaved, ABAB, as
        `plan_campaign` laid them out), in random order within a repetition.

        Costs O(open campaigns and jobs of this backend), not O(history): one delimited
        LIST of the backend's campaigns, one LIST of its done markers, then only the
        campaigns not yet done. A campaign found with every job committed gets its done
        marker here, so no runner lists it again. Lakes of the first key layout (no
        backend in the key) are still read, at the old cost.
        """
        backend = self.backend
        done = {
            campaign
            for key in self.store.list(layout.done_prefix(backend))
            if (campaign := layout.campaign_from_done_key(key)) is not None
        }
        found: list[tuple[str, str, str]] = []
        for campaign_id in self.store.list_children(layout.backend_prefix(backend)):
            if campaign_id in done or campaign_id in self._done_campaigns:
                continue
            try:
                prefix = layout.backend_campaign_prefix(backend, campaign_id)
            except ValueError:
                continue
            manifests = _manifests(self.store.list(prefix))
            open_here = self._open_in(manifests)
            if open_here:
                found += open_here
            elif manifests:
                # Done only when its manifests are there and all committed. A campaign
                # listed with none is being published: a local lake makes its folder
                # before the first file lands, and marking it done then left that job
                # unrun for good (seen: `publish --wait` timed out on one).
                self._mark_done(campaign_id)
        for child in self.store.list_children(layout.JOBS_PREFIX):
            if f"{layout.JOBS_PREFIX}{child}/" != layout.BY_BACKEND_PREFIX:
                try:  # a campaign of the first layout: every backend's jobs, listed as before
                    found += self._open_in(
                        _manifests(self.store.list(layout.campaign_prefix(child)))
                    )
                except ValueError:
                    continue
        random.shuffle(found)  # runners spread over the backlog instead of racing for one job
        found.sort(key=lambda job: repetition_of(job[1]) or 0)  # stable: shuffled within
        return found

    # builtins.list: inside this class `list` names the method above.
    def _open_in(
        self, manifests: Iterable[tuple[str, str, str]]
    ) -> builtins.list[tuple[str, str, str]]:
        """The jobs among `manifests` that have no commit marker (HEAD each once)."""
        out = []
        for campaign_id, job_id, key in manifests:
            if job_id in self._done:
                continue
            if self.store.head(layout.commit_key(job_id)) is not None:
                self._done.add(job_id)
                continue
            out.append((campaign_id, job_id, key))
        return out

    def _mark_done(self, campaign_id: str) -> None:
        self._done_campaigns.add(campaign_id)
        at = now_iso()
        marker = json.dumps({"runner": self.runner_id, "at": at}).encode()
        try:
            self.store.put(layout.done_key(self.backend, campaign_id), marker, if_none_match=True)
        except PreconditionFailed:
            pass  # another runner saw it first
        except StoreError as exc:
            log.warning("could not mark campaign %s done: %s", campaign_id, exc)
