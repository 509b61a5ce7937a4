"""The nemesis: injects every fault kind on a schedule while runners work through jobs.

Process faults act on one runner at a time (three threads, never on the same runner);
infrastructure faults (the S3 server, OpenBao, the proxy) run in a third thread. Each kind is
injected `rounds` times, in shuffled order. `run_history_test` is the whole test: start
a private stack and runners, publish jobs in waves, let the nemesis loose, wait until
every published job is committed, stop the runners, and hand everything to the checker.

Kill -9 "at a step" uses the runner's test-only pause file (FIOLAKE_PAUSE_FILE): the
runner stops itself at the step and the nemesis kills it there. That is the one fake
here: without it a kill lands at a random point. Kill during fio needs no help: the
nemesis waits until the runner has a fio child.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from fiolake.aggregator.lake.lake import connect
from fiolake.runner.distributed.history import PAUSE_STEPS
from fiolake.runner.distributed.service import UNJUDGED_MAX_S
from fiolake.stack.local import start_openbao, stop_openbao
from tests.faults.checker import Report, check_lake_against, read_history
from tests.faults.cluster import Cluster, RunnerSlot

STEP_KILLS = {f"kill {step}": step for step in PAUSE_STEPS}
PROCESS_KINDS = (*STEP_KILLS, "kill during fio", "SIGSTOP > lease", "clock skew")
INFRA_KINDS = ("S3 server restart", "OpenBao down", "dropped responses", "delayed responses")
KINDS = (*PROCESS_KINDS, *INFRA_KINDS)
# A job a runner could not verify (OpenBao down) waits up to UNJUDGED_MAX_S before that
# runner looks at it again; a drain that gives up sooner calls a waiting job lost.
DRAIN_STALL_S = UNJUDGED_MAX_S + 60.0


@dataclass
class Outcome:
    """What a history test did and what the checker said."""

    report: Report
    seed: int = 0  # of the fault schedule (random.seed): FIOLAKE_NEMESIS_SEED replays it
    injected: Counter = field(default_factory=Counter)
    wall_s: float = 0.0
    jobs: int = 0
    skewed_commits: int = 0
    dropped: int = 0
    delayed: int = 0
    crashes: list[str] = field(default_factory=list)  # runners that exited unasked
    phases: dict[str, float] = field(default_factory=dict)  # seconds from the start


class Nemesis:
    """Fault injection against a running `Cluster`."""

    def __init__(self, cluster: Cluster, rounds: int):
        self.cluster = cluster
        self.rounds = rounds
        self.injected: Counter[str] = Counter()
        self.failed: list[str] = []
        self.crashes: list[str] = []
        self.done = threading.Event()
        self._busy: set[str] = set()
        self._lock = threading.Lock()
        kinds = [k for k in PROCESS_KINDS for _ in range(rounds)]
        random.shuffle(kinds)
        self._process_queue = kinds

    # -- process faults ---------------------------------------------------------------
    def _take(self, want: str) -> RunnerSlot | None:
        """A runner no other fault is using: the skewed one for `clock skew`."""
        with self._lock:
            free = [
                s
                for s in self.cluster.slots
                if s.runner_id not in self._busy and s.alive() and (s.skewed or want != "skew")
            ]
            if not free:
                return None
            slot = random.choice(free)
            self._busy.add(slot.runner_id)
            return slot

    def _release(self, slot: RunnerSlot) -> None:
        with self._lock:
            self._busy.discard(slot.runner_id)

    def _wait(self, cond, timeout_s: float) -> bool:  # noqa: ANN001
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if cond():
                return True
            time.sleep(0.02)
        return False

    def _restart(self, slot: RunnerSlot) -> None:
        self.cluster.kill_runner(slot)
        # Sometimes come back at once (the spool is drained under the old lease), sometimes
        # after the lease has expired (another runner may have taken the job over).
        time.sleep(random.choice((0.0, 0.0, 2 * self.cluster.ttl_s)))
        self.cluster.start_runner(slot)

    def _one_process_fault(self, kind: str) -> bool:
        slot = self._take("skew" if kind == "clock skew" else "any")
        if slot is None:
            return False
        try:
            if kind in STEP_KILLS:
                slot.pause_file.write_text(STEP_KILLS[kind])
                hit = self._wait(slot.stopped, 20)
                slot.pause_file.unlink(missing_ok=True)
                if not (hit or self._wait(slot.stopped, 0.2)):
                    return False
                self._restart(slot)
            elif kind == "kill during fio":
                if not self._wait(lambda: slot.fio_child() is not None, 20):
                    return False
                self._restart(slot)
            elif kind == "SIGSTOP > lease":
                if not self._wait(lambda: slot.fio_child() is not None, 20):
                    return False
                slot.proc.send_signal(signal.SIGSTOP)
                time.sleep(self.cluster.ttl_s + 2)
                slot.proc.send_signal(signal.SIGCONT)
            else:  # clock skew: the skewed runner comes back with another skew
                self._restart(slot)
            return True
        finally:
            self._release(slot)

    def process_worker(self) -> None:
        while True:
            with self._lock:
                if not self._process_queue:
                    return
                kind = self._process_queue.pop()
            if self._one_process_fault(kind):
                self.injected[kind] += 1
            else:
                self.failed.append(kind)
                with self._lock:
                    self._process_queue.insert(0, kind)  # try again later
                time.sleep(0.5)

    def supervisor(self) -> None:
        """Restart runners that exited on their own (a restart policy), noting each."""
        while not self.done.wait(0.5):
            with self._lock:
                idle = [s for s in self.cluster.slots if s.runner_id not in self._busy]
            for slot in idle:
                if slot.proc is not None and not slot.alive():
                    why = slot.last_error()
                    self.crashes.append(
                        f"{slot.runner_id} exited {slot.proc.returncode}"
                        + (f" ({why})" if why else "")
                    )
                    self.cluster.start_runner(slot)

    # -- infrastructure faults --------------------------------------------------------
    def infra_worker(self) -> None:
        kinds = [k for k in INFRA_KINDS for _ in range(self.rounds)]
        random.shuffle(kinds)
        proxy = self.cluster.proxy
        for kind in kinds:
            time.sleep(random.uniform(0.5, 1.5))
            if kind == "S3 server restart":
                self.cluster.restart_store()
            elif kind == "OpenBao down":
                stop_openbao(self.cluster.state_dir)
                time.sleep(3)
                start_openbao(self.cluster.state_dir)
            else:
                proxy.mode = "drop" if kind == "dropped responses" else "delay"
                time.sleep(2.5)
                proxy.mode = "pass"
            self.injected[kind] += 1


def run_history_test(
    root: Path,
    *,
    jobs: int,
    rounds: int,
    publish_s: float,
    seed: int,
    ttl_s: float = 3.0,
    server: str = "minio",
) -> Outcome:
    """The whole history test; `jobs` published in waves over `publish_s` seconds.

    `seed` seeds the fault schedule (which kinds in which order, which runner, restart
    delays, clock skews); thread timing still varies, so a replay is close, not exact.
    The lake listing is left in `root`/lake-listing.txt for the evidence of a failure."""
    started = time.monotonic()
    random.seed(seed)
    print(f"nemesis seed {seed}", flush=True)
    cluster = Cluster(root, ttl_s=ttl_s, server=server)
    outcome = Outcome(Report(), seed=seed)
    try:
        cluster.start()
        nemesis = Nemesis(cluster, rounds)
        threads = [
            threading.Thread(target=nemesis.process_worker, daemon=True),
            threading.Thread(target=nemesis.process_worker, daemon=True),
            threading.Thread(target=nemesis.process_worker, daemon=True),
            threading.Thread(target=nemesis.infra_worker, daemon=True),
        ]
        supervisor = threading.Thread(target=nemesis.supervisor, daemon=True)
        for thread in [*threads, supervisor]:
            thread.start()
        outcome.phases["stack up"] = time.monotonic() - started
        campaigns = _publish(cluster, jobs, publish_s)
        outcome.phases["published"] = time.monotonic() - started
        for thread in threads:
            thread.join()
        outcome.phases["nemesis done"] = time.monotonic() - started
        nemesis.done.set()
        supervisor.join()
        outcome.crashes = nemesis.crashes
        for slot in cluster.slots:  # every runner back, none stopped
            if not slot.alive():
                cluster.start_runner(slot)
            slot.proc.send_signal(signal.SIGCONT)
        # Drain the backlog while it moves: a loaded machine is slow, not lossy. A job is
        # lost only if nothing commits for DRAIN_STALL_S while jobs remain.
        committed, progress_at = -1, time.monotonic()
        store = cluster.store()  # the faults are over: one client for the whole drain
        while (now_committed := cluster.committed_count(store)) < len(cluster.published):
            if now_committed != committed:
                committed, progress_at = now_committed, time.monotonic()
            elif time.monotonic() - progress_at > DRAIN_STALL_S:
                break
            time.sleep(1.0)
        outcome.phases["all committed"] = time.monotonic() - started
        cluster.stop_runners_gracefully()
        (root / "lake-listing.txt").write_text("".join(f"{k}\n" for k in cluster.store().list("")))
        events = read_history([s.history for s in cluster.slots])
        with connect(f"s3://{cluster.env.bucket}", cluster.lake_settings("admin")) as lake:
            outcome.report = check_lake_against(
                events,
                cluster.published,
                cluster.store(),
                lake,
                spools=[s.spool for s in cluster.slots],
                campaigns=campaigns,
            )
        outcome.injected = nemesis.injected
        outcome.jobs = len(cluster.published)
        outcome.dropped, outcome.delayed = cluster.proxy.dropped, cluster.proxy.delayed
        skewed = {s.runner_id for s in cluster.slots if s.skewed}
        outcome.skewed_commits = sum(
            1
            for e in events
            if e["process"] in skewed
            and (e["type"], e["f"]) == ("ok", "put")
            and e.get("key", "").startswith("commits/")
        )
    finally:
        cluster.stop()
    outcome.wall_s = time.monotonic() - started
    return outcome


def _publish(cluster: Cluster, jobs: int, publish_s: float) -> list[str]:
    """Publish `jobs` in waves of about 10 over `publish_s` (a wave whose signing fails,
    OpenBao being down, is tried again)."""
    waves = max(1, jobs // 10)
    campaigns = []
    start = time.monotonic()
    for wave in range(waves):
        size = jobs // waves + (1 if wave < jobs % waves else 0)
        campaign = f"c-faults-{wave:04d}"
        while not cluster.publish_wave(campaign, size):
            time.sleep(1)
        campaigns.append(campaign)
        wait = start + publish_s * (wave + 1) / waves - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    return campaigns
