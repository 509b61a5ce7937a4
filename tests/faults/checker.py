"""The checker of the fault-injection history test: reads the histories and the lake.

It asserts what "exactly-once results" promises, whatever the nemesis did:

1. every published job has exactly one commit (a marker in the lake, one version of it,
   and at most one run id ever acknowledged for it in the history);
2. every commit names a run whose tables and raw output are all present (every object
   the attempt uploaded, and `lake check`'s rules);
3. the views hold no rows of uncommitted attempts;
4. a zombie attempt never commits: no runner invokes a commit without holding the job's
   lease, or after another runner took that lease over (a higher epoch). A lease is held
   from an acknowledged write, or from a read-back of the runner's own nonce after an
   ambiguous answer (`_lease_holds`);
5. nothing in a spool is lost: no finished attempt is left in any runner's spool;
6. `status` counts equal the lake's.

Histories are JSON lines written by `fiolake.runner.distributed.history` (one file per runner id,
across its incarnations) plus the driver's `publish` events. A line cut short by kill -9
is skipped.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fiolake import layout
from fiolake.aggregator.lake.check import check_lake
from fiolake.aggregator.lake.lake import Lake
from fiolake.campaign_progress import campaign_status
from fiolake.commits import Commit
from fiolake.errors import NotFound
from fiolake.store import ObjectStore


@dataclass
class Report:
    """What the checker found: problems (empty = passed) and counts worth printing."""

    problems: list[str] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def read_history(paths: Iterable[Path]) -> list[dict]:
    """Every event of every file, ordered by the host clock (partial lines skipped)."""
    events = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue  # the last line of a killed process
    return sorted(events, key=lambda e: e.get("t", 0))


def _puts(events: Sequence[dict], prefix: str) -> list[dict]:
    return [e for e in events if e.get("f") == "put" and e.get("key", "").startswith(prefix)]


def _job_of(key: str, prefix: str) -> str:
    return key[len(prefix) : -len(".json")]


def check_history(events: Sequence[dict]) -> Report:
    """The rules that need only the history: double commits and zombie commits."""
    report = Report()
    commits = _puts(events, layout.COMMITS_PREFIX)
    acked: dict[str, set[str]] = defaultdict(set)
    for e in commits:
        if e["type"] == "ok":
            acked[_job_of(e["key"], layout.COMMITS_PREFIX)].add(e["run_id"])
    for job, runs in sorted(acked.items()):
        if len(runs) > 1:
            report.problems.append(f"double commit: job {job} acknowledged for {sorted(runs)}")
    report.problems += _zombie_commits(events, commits)
    report.stats["commits acknowledged"] = sum(len(r) for r in acked.values())
    report.stats["commit invocations"] = sum(1 for e in commits if e["type"] == "invoke")
    return report


def _lease_holds(events: Sequence[dict]) -> dict[str, list[tuple[int, str, int]]]:
    """When each runner came to hold each job's lease: (t, runner, epoch) in host-clock order.

    A runner holds a lease from an acknowledged lease write, or from a read-back that
    returns the nonce of its own write after an ambiguous answer (a 412 or 404 to a retried
    request whose first attempt landed, a timeout, a dropped response): `fiolake.lease`
    settles such an answer by reading the lease back, and its own nonce there means its
    write is the one that landed, exactly as if the PUT had been acknowledged.
    """
    holds: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    written: dict[tuple[str, str], int] = {}  # (runner, nonce) -> epoch of its lease write
    for e in events:
        key = e.get("key", "")
        if not key.startswith(layout.CLAIMS_PREFIX) or "epoch" not in e:
            continue
        job = _job_of(key, layout.CLAIMS_PREFIX)
        if e["f"] == "put" and e["type"] == "invoke" and "nonce" in e:
            written[(e["process"], e["nonce"])] = e["epoch"]
        elif e["f"] == "put" and e["type"] == "ok":
            holds[job].append((e["t"], e["process"], e["epoch"]))
        elif e["f"] == "get" and e["type"] == "ok" and (e["process"], e.get("nonce")) in written:
            holds[job].append((e["t"], e["process"], e["epoch"]))
    return holds


def _last_read_back(events: Sequence[dict], process: str, job: str, before: int) -> str | None:
    """The runner named by the last lease `process` read for `job` before `before`."""
    key = layout.claim_key(job)
    reads = [
        e
        for e in events
        if e["f"] == "get" and e["type"] == "ok" and e.get("key") == key
        and e["process"] == process and e["t"] < before
    ]  # fmt: skip
    return reads[-1].get("runner") if reads else None


def _zombie_commits(events: Sequence[dict], commits: Sequence[dict]) -> list[str]:
    leases = _lease_holds(events)
    problems = []
    for c in commits:
        if c["type"] != "invoke":
            continue
        job = _job_of(c["key"], layout.COMMITS_PREFIX)
        before = [w for w in leases[job] if w[0] < c["t"]]
        mine = [w for w in before if w[1] == c["process"]]
        if not mine:
            seen = _last_read_back(events, c["process"], job, c["t"])
            why = f" (its last read of the lease named {seen})" if seen else ""
            problems.append(
                f"zombie commit: {c['process']} invoked the commit of {job} "
                f"(run {c['run_id']}) without ever holding its lease{why}"
            )
            continue
        epoch = mine[-1][2]
        takers = [w for w in before if w[1] != c["process"] and w[2] > epoch]
        if takers:
            t, who, their = takers[0]
            problems.append(
                f"zombie commit: {c['process']} (epoch {epoch}) invoked the commit of {job} "
                f"(run {c['run_id']}) {(c['t'] - t) / 1e9:.2f} s after {who} took its "
                f"lease over (epoch {their})"
            )
    return problems


def check_lake_against(
    events: Sequence[dict],
    published: Iterable[str],
    store: ObjectStore,
    lake: Lake,
    *,
    spools: Iterable[Path] = (),
    campaigns: Iterable[str] = (),
) -> Report:
    """Every rule: the history ones, then the history against the lake and the views."""
    report = check_history(events)
    published = sorted(set(published))
    markers: dict[str, Commit] = {}
    for job in published:
        try:
            markers[job] = Commit.from_bytes(store.get(layout.commit_key(job))[0])
        except NotFound:
            report.problems.append(f"lost job: {job} was published but never committed")
    acked = {
        (_job_of(e["key"], layout.COMMITS_PREFIX), e["run_id"])
        for e in _puts(events, layout.COMMITS_PREFIX)
        if e["type"] in ("invoke", "ok")
    }
    for job, marker in markers.items():
        if (job, marker.run_id) not in acked:
            report.problems.append(f"commit of {job} names {marker.run_id}, never committed")
    report.problems += _one_version_each(store, markers)
    report.problems += _attempt_objects_present(events, store, markers)
    report.problems += [f"lake check: {p.job_id} {p.run_id}: {p.problem}" for p in check_lake(lake)]
    report.problems += _views_hold_committed_only(lake, {m.run_id for m in markers.values()})
    for spool in spools:
        left = [p.name for p in Path(spool).glob("*") if (p / "meta.json").exists()]
        if left:
            report.problems.append(f"spool {spool} still holds {left}")
    report.problems += _status_matches(store, lake, campaigns)
    uploaded = {e["run_id"] for e in events if e.get("run_id") and e.get("f") == "put"}
    report.stats["published jobs"] = len(published)
    report.stats["committed jobs"] = len(markers)
    report.stats["orphan attempts (uploaded, never committed)"] = len(
        uploaded - {m.run_id for m in markers.values()}
    )
    return report


def _one_version_each(store: ObjectStore, markers: dict[str, Commit]) -> list[str]:
    """With bucket versioning on, an overwritten marker would leave a second version."""
    client = getattr(store, "client", None)
    if client is None:
        return []
    versions: Counter[str] = Counter()
    pages = client.get_paginator("list_object_versions").paginate(
        Bucket=store.bucket, Prefix=store.prefix + layout.COMMITS_PREFIX
    )
    for page in pages:
        for v in page.get("Versions", []) + page.get("DeleteMarkers", []):
            versions[v["Key"][len(store.prefix) :]] += 1
    return [
        f"commit marker of {job} has {versions[layout.commit_key(job)]} versions"
        for job in markers
        if versions[layout.commit_key(job)] != 1
    ]


def _attempt_objects_present(
    events: Sequence[dict], store: ObjectStore, markers: dict[str, Commit]
) -> list[str]:
    """Every object a committed attempt put (acknowledged or not) is in the lake."""
    wanted: dict[str, set[str]] = defaultdict(set)
    committed = {m.run_id for m in markers.values()}
    for e in events:
        if e.get("f") == "put" and e.get("run_id") in committed and "cond" in e:
            if layout.run_id_of_attempt_key(e["key"]) is not None:
                wanted[e["run_id"]].add(e["key"])
    present = set(store.list(layout.RESULTS_PREFIX)) | set(store.list(layout.RAW_PREFIX))
    problems = []
    for run_id, keys in sorted(wanted.items()):
        missing = sorted(keys - present)
        if missing:
            problems.append(f"committed run {run_id} lacks {missing}")
    for run_id in sorted(committed - set(wanted)):
        if events:  # a run committed by a process whose history we lack
            problems.append(f"committed run {run_id} has no upload in the history")
    return problems


def _views_hold_committed_only(lake: Lake, committed: set[str]) -> list[str]:
    problems = []
    cur = lake.cursor()
    try:
        for view in ("runs", "results", "timeseries", "percentiles"):
            runs = {r[0] for r in cur.execute(f"SELECT DISTINCT run_id FROM {view}").fetchall()}
            stray = runs - committed
            if stray:
                problems.append(f"view {view} holds uncommitted runs {sorted(stray)[:5]}")
            if view == "runs" and runs != committed:
                problems.append(f"view runs lacks committed runs {sorted(committed - runs)[:5]}")
    finally:
        cur.close()
    return problems


def _status_matches(store: ObjectStore, lake: Lake, campaigns: Iterable[str]) -> list[str]:
    problems = []
    cur = lake.cursor()
    try:
        for campaign in campaigns:
            jobs = campaign_status(store, campaign)
            counted = Counter(j.state for j in jobs)
            rows = cur.execute(
                "SELECT status, count(*) FROM runs WHERE campaign_id = ? GROUP BY 1", [campaign]
            ).fetchall()
            if counted != Counter(dict(rows)):
                problems.append(f"status of {campaign} says {dict(counted)}, the lake {dict(rows)}")
    finally:
        cur.close()
    return problems
