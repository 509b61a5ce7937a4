"""The stateless runner: discover → verify → claim → run → upload → commit, forever.

Only object storage is shared state. A runner needs no inbound port; any number
of them (per host × backend) pull from the same lake.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from functools import partial

from fiolake import layout
from fiolake.commits import REASON_CHARS, Commit
from fiolake.errors import (
    FiolakeError,
    ManifestError,
    NotFound,
    PolicyError,
    StoreError,
)
from fiolake.fleet import IDLE_EVERY_S
from fiolake.lease import claim_lease, release_lease, resume_lease, still_ours
from fiolake.manifest import Manifest, verify_envelope
from fiolake.runner import attempt
from fiolake.runner import execute as ex
from fiolake.runner.distributed import gang
from fiolake.runner.distributed.config import RunnerConfig, RunnerStats
from fiolake.runner.distributed.discovery import OpenJobs
from fiolake.runner.distributed.fleet import FleetStatus
from fiolake.runner.heartbeat import Heartbeat
from fiolake.runner.host import target
from fiolake.runner.host.lock import HostLock, wait_while_held
from fiolake.runner.precondition import ROLE
from fiolake.runner.spool import Spool
from fiolake.signing import Keyring, KeyringUnavailable
from fiolake.store import ObjectStore
from fiolake.timetext import now_iso

log = logging.getLogger("fiolake.runner")

# A job this runner could not judge (Vault down, no source for its key) is not fetched
# again before this many seconds, doubling on every further miss up to UNJUDGED_MAX_S:
# an outage costs a few requests per job, not one GET per job per poll.
UNJUDGED_FIRST_S = 5.0
UNJUDGED_MAX_S = 300.0


# How long a run's upload and commit may keep the host lock after fio: a few seconds
# normally; a store outage retries for minutes, and the host's other runners go on.
UPLOAD_UNDER_LOCK_S = 30.0


def precondition_of(manifest: Manifest) -> attempt.NamedJobFile | None:
    """The job a manifest runs first on the measured job's files (`publish --precondition`)."""
    if manifest.precondition is None:
        return None
    return attempt.NamedJobFile(manifest.precondition_profile or ROLE, manifest.precondition)


class Runner:
    """One runner process: a backend, a target directory, a lake, a keyring."""

    def __init__(self, store: ObjectStore, keyring: Keyring, config: RunnerConfig, bucket: str):
        self.store = store
        self.keyring = keyring
        self.config = config
        self.bucket = bucket
        self.stats = RunnerStats()
        self.stop_requested = threading.Event()
        self.spool = Spool(config.spool_dir)
        # Every attempt is spooled before upload and resumed after a crash (runner.attempt).
        self.durability = attempt.Spooled(config.upload_deadline_s, spool=self.spool)
        self.discovery = OpenJobs(store, config.backend, config.runner_id)
        self._waiting: dict[str, str] = {}  # job id -> reason last noted in waiting/
        # job id -> (monotonic time to look again, current delay): jobs left unjudged
        self._unjudged: dict[str, tuple[float, float]] = {}
        self.fleet = FleetStatus(
            store, config.runner_id, config.backend, config.labels, lambda: vars(self.stats)
        )

    # -- discovery -----------------------------------------------------------------------
    def open_jobs(self) -> list[tuple[str, str, str]]:
        """(campaign_id, job_id, key) of this backend's open jobs (runner.distributed.discovery)."""
        return self.discovery.list()

    # -- one job -------------------------------------------------------------------------
    def try_job(self, campaign_id: str, job_id: str, key: str) -> str | None:
        """Attempt one job; the run status, or None when it was not ours to run."""
        try:
            data, _ = self.store.get(key)
        except NotFound:
            return None
        try:
            manifest = verify_envelope(data, keyring=self.keyring, bucket=self.bucket, key=key)
        except KeyringUnavailable as exc:
            # Vault unreachable, or no source here for such keys: not the manifest's
            # fault. Leave the job (another runner or a later try judges it) and say why.
            delay = self._back_off(job_id)
            log.warning("cannot verify %s yet (next try in %.0f s): %s", job_id, delay, exc)
            self._note_waiting(job_id, f"cannot verify the manifest yet: {exc}")
            return None
        except ManifestError as exc:
            request = ex.RunRequest(
                job_file_text="",
                profile="unknown",
                backend="unknown",
                target_dir=self.config.target_dir,
                job_id=job_id,
                campaign_id=campaign_id,
                runner=self.config.runner_id,
                labels=self.config.labels,
            )
            return self._reject(request, f"manifest refused: {exc}")
        self._unjudged.pop(job_id, None)
        if manifest.backend != self.config.backend:
            return None
        misplaced = self._misplaced(manifest)
        if misplaced:
            log.warning("leaving %s to another runner: %s", job_id, misplaced)
            self._note_waiting(job_id, f"not run here: {misplaced}")
            return None
        request = self._request(manifest, job_id, campaign_id)
        if manifest.gang is not None:  # N runners run it together: runner.distributed.gang
            return gang.run_member(self, manifest, request)
        return self._run_solo(manifest, request)

    def _run_solo(self, manifest: Manifest, request: ex.RunRequest) -> str | None:
        """Claim, run and commit a solo job; its status, or None when it was not ours."""
        job_id = request.job_id
        lease = claim_lease(self.store, job_id, self.config.runner_id, self.config.ttl_s)
        if lease is None:
            return None
        # A pass's listing ages while it runs jobs: a job committed since is not run again.
        if self.stop_requested.is_set() or self.store.head(layout.commit_key(job_id)):
            release_lease(self.store, lease)
            return None
        log.info(
            "claimed %s (%s on %s, epoch %d)",
            job_id,
            manifest.profile,
            manifest.backend,
            lease.epoch,
        )
        self.fleet.job(job_id, self.config.ttl_s)
        heartbeat = Heartbeat(self.store, lease)
        heartbeat.start()
        # The lock fio ran under stays held through the upload and the commit: that work
        # (this process's and the server's) is not measured as the next run's busy CPU.
        lock = self.host_lock()
        if lock is not None:
            lock.pin(at_most_s=UPLOAD_UNDER_LOCK_S)
        try:
            done = self._attempt(manifest, request, heartbeat, lock)
            if heartbeat.lost.is_set():
                fio_run = done.outcome.fio_run
                log.warning(
                    "lease of %s was lost: attempt %s not committed (fio stopped by: %s)",
                    job_id,
                    done.outcome.run_id,
                    fio_run.watchdog if fio_run else None,
                )
                self.stats.lost += 1
                return None

            def ours() -> bool:
                # Stop renewing first: checking while the heartbeat may still swap the
                # nonce could mistake our own renewal for a takeover.
                held = heartbeat.stop()
                return not heartbeat.lost.is_set() and still_ours(self.store, held)

            won = attempt.record(
                self.store, done, self.durability, runner=self.config.runner_id, still_ours=ours
            )
            if won == attempt.LOST:
                log.warning(
                    "lease of %s was lost before commit: attempt %s orphaned",
                    job_id,
                    done.outcome.run_id,
                )
                self.stats.lost += 1
                return None
            return self._counted(job_id, done.outcome.run_id, done.outcome.status, won)
        finally:
            if lock is not None:
                lock.unpin()
            heartbeat.stop()

    def _attempt(
        self,
        manifest: Manifest,
        request: ex.RunRequest,
        heartbeat: Heartbeat,
        lock: HostLock | None,
    ) -> attempt.Attempt:
        """Check and run the job (refused: recorded, not run) while the heartbeat holds
        its lease; losing the lease stops fio."""
        try:
            planned = attempt.prepare(
                request, precondition_of(manifest), self.config.fio, self.config.block
            )
        except PolicyError as exc:
            return attempt.refused(request, attempt.refusal(exc))
        # Waiting for the host lock keeps the lease (the heartbeat renews it) and uses no
        # repetition: the job runs once the other fio is done.
        return attempt.conduct(
            planned,
            fio=self.config.fio,
            should_stop=heartbeat.lost.is_set,
            grace_s=self.config.grace_s,
            host_lock=lock,
            on_lock_wait=lambda holder: self._lock_wait(request.job_id, holder),
        )

    def _request(self, manifest: Manifest, job_id: str, campaign_id: str) -> ex.RunRequest:
        """What to run for a verified manifest, here, under this runner's name."""
        return ex.RunRequest(
            job_file_text=manifest.job_file,
            profile=manifest.profile,
            backend=manifest.backend,
            target_dir=self.config.target_dir,
            job_id=job_id,
            campaign_id=campaign_id,
            repetition=manifest.repetition,
            runtime_s=manifest.runtime_s,
            size_bytes=manifest.size_bytes,
            runner=self.config.runner_id,
            labels=self.config.labels,
            caps=self.config.caps,
            expect_mount=manifest.expect_mount or self.config.expect_mount,
            expect_fs=manifest.expect_fs or self.config.expect_fs,
            gang_size=manifest.gang,
            sequence=manifest.sequence,
            device=self.config.block.path if self.config.block else None,
            device_start="used" if self.config.block else None,
            mkfs_options=self.config.mkfs_options,
        )

    def host_lock(self, *, shared: bool = False) -> HostLock | None:
        """A fresh handle on the host lock for one job (None under --share-host)."""
        path = self.config.host_lock
        if path is None:
            return None
        return HostLock(path, shared=shared, holder=f"runner {self.config.runner_id}")

    def _lock_wait(self, job_id: str, holder: str) -> None:
        log.info("%s waits for the host lock (held by %s)", job_id, holder or "?")

    def _back_off(self, job_id: str) -> float:
        """Leave `job_id` alone for a while (longer after every miss); the delay set."""
        _, last = self._unjudged.get(job_id, (0.0, UNJUDGED_FIRST_S / 2))
        delay = min(last * 2, UNJUDGED_MAX_S)
        # Jitter, so runners that met the same outage do not come back in step.
        self._unjudged[job_id] = (time.monotonic() + delay * random.uniform(0.8, 1.0), delay)
        return delay

    def _backing_off(self, job_id: str) -> bool:
        """Whether `job_id` was left unjudged recently and is not due for another look."""
        due = self._unjudged.get(job_id)
        return due is not None and time.monotonic() < due[0]

    def _misplaced(self, manifest: Manifest) -> str | None:
        """Why this runner's target is not where the manifest says the job must run."""
        block = self.config.block
        if manifest.on_device and block is None:
            return (
                "the job needs a raw block device (published with --target device); this "
                f"runner benchmarks the directory {self.config.target_dir} — start a runner "
                "with --device PATH --destroy-data"
            )
        if block is not None:
            if manifest.on_device:
                return None
            return (
                "the job needs a directory (published with --target dir); this runner "
                f"benchmarks the raw block device {block.path} — start a runner with --dir"
            )
        if manifest.expect_mount is None and manifest.expect_fs is None:
            return None
        try:
            target.check_expectations(
                target.inspect(self.config.target_dir),
                expect_mount=manifest.expect_mount,
                expect_fs=manifest.expect_fs,
            )
        except FiolakeError as exc:
            return str(exc)
        return None

    def _note_waiting(self, job_id: str, reason: str) -> None:
        """Tell `fiolake status` why this runner leaves `job_id` waiting (once per reason)."""
        if self._waiting.get(job_id) == reason:
            return
        note = {
            "runner": self.config.runner_id,
            "reason": reason[:REASON_CHARS],
            "at": now_iso(),
        }
        try:
            self.store.put(
                layout.waiting_key(job_id, self.config.runner_id), json.dumps(note).encode()
            )
            self._waiting[job_id] = reason
        except StoreError as exc:
            log.warning("cannot leave a note on %s: %s", job_id, exc)

    def _reject(self, request: ex.RunRequest, reason: str) -> str | None:
        lease = claim_lease(self.store, request.job_id, self.config.runner_id, self.config.ttl_s)
        if lease is None:
            return None
        log.warning("rejecting %s: %s", request.job_id, reason)
        done = attempt.refused(request, reason)
        won = attempt.record(self.store, done, self.durability, runner=self.config.runner_id)
        return self._counted(request.job_id, done.outcome.run_id, done.outcome.status, won)

    def _counted(
        self, job_id: str, run_id: str, status: str, won: Commit | None | str
    ) -> str | None:
        """Count a committed attempt; None when another attempt had committed the job."""
        self.discovery.committed(job_id)
        if won is None:
            log.warning("job %s was committed by another attempt; %s orphaned", job_id, run_id)
            self.stats.lost += 1
            return None
        setattr(self.stats, status, getattr(self.stats, status) + 1)
        log.info("committed %s: run %s %s", job_id, run_id, status)
        return status

    # -- the loop ------------------------------------------------------------------------
    def drain_spool(self) -> int:
        """Upload and commit attempts left in the spool by an earlier crash or outage."""
        entries = self.spool.pending()
        for entry in entries:
            job_id = entry.meta["job_id"]
            lease = resume_lease(self.store, job_id, self.config.runner_id, self.config.ttl_s)
            if lease is None:
                log.warning("%s is another runner's now: spooled %s orphaned", job_id, entry.run_id)
                self.spool.remove(entry)
                continue
            log.info("re-uploading spooled run %s of job %s", entry.run_id, job_id)
            won = attempt.commit_spooled(
                self.store,
                entry,
                self.durability,
                still_ours=partial(still_ours, self.store, lease),
            )
            if won == attempt.LOST:
                log.warning(
                    "lease of %s was taken over while spooled %s re-uploaded: orphaned",
                    job_id,
                    entry.run_id,
                )
                self.stats.lost += 1
                continue
            self._counted(job_id, entry.run_id, entry.meta["status"], won)
        return len(entries)

    def serve(self) -> RunnerStats:
        """Run jobs until stopped, --once, --max-jobs or --idle-exit says so."""
        cfg = self.config
        self.fleet.start()
        idle_since = time.monotonic()
        while not self.stop_requested.is_set():
            did_work = False
            self._wait_for_quiet_host()
            try:
                self.drain_spool()  # a crash's leftovers, or an outage longer than the deadline
                for campaign_id, job_id, key in self.open_jobs():
                    if self.stop_requested.is_set() or self._limit_reached():
                        break
                    if self._backing_off(job_id):
                        continue
                    if self.try_job(campaign_id, job_id, key) is not None:
                        did_work = True
            except StoreError as exc:
                log.warning("store unavailable, retrying: %s", exc)
            except FiolakeError as exc:
                log.error("%s", exc)
            self.fleet.idle(did_work)
            if did_work:
                idle_since = time.monotonic()
            if cfg.once or self._limit_reached():
                break
            if cfg.idle_exit_s is not None and time.monotonic() - idle_since >= cfg.idle_exit_s:
                log.info("idle for %.0f s: exiting", cfg.idle_exit_s)
                break
            if not did_work:
                self.stop_requested.wait(cfg.poll_s)
        self.fleet.stop()
        return self.stats

    def _wait_for_quiet_host(self) -> None:
        """Ask the store for jobs only when no other fio holds the host lock: this runner
        could not run one meanwhile, and its polls would count as busy CPU in that run.
        Bounded by the fleet's idle heartbeat, so the runner still reports it is alive."""
        path = self.config.host_lock
        if path is None or self.config.once:
            return
        try:
            wait_while_held(path, self.stop_requested.is_set, max_s=IDLE_EVERY_S / 2)
        except FiolakeError:
            pass  # the lock cannot be used: the job's own acquire says so, where it counts

    def _limit_reached(self) -> bool:
        return self.config.max_jobs is not None and self.stats.jobs >= self.config.max_jobs
