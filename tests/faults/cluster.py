"""Runner processes against a private MinIO + OpenBao, for the fault-injection history test.

The stack is private (its own state dir and ports): the nemesis restarts MinIO and stops
OpenBao, which would disturb the session's shared stack. Every runner is a real
`fiolake runner` process with its own history file, spool and target dir; a runner that
is killed is started again as a new incarnation with the same runner id and spool (the
same host coming back), and a fresh key cache (so an incarnation started while OpenBao
is down cannot verify anything until it returns).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from fiolake import layout
from fiolake.config import Settings
from fiolake.errors import FiolakeError, PreconditionFailed
from fiolake.manifest import new_manifest, sign_manifests
from fiolake.s3client import S3Settings
from fiolake.stack.env import StackEnv
from fiolake.stack.local import restart_minio, stack_down, stack_up
from fiolake.stack.process import free_ports
from fiolake.store import ObjectStore, S3Store
from tests.faults.proxy import FaultyProxy
from tests.hygiene import remove_abandoned_sem_temps, remove_faketime_segments
from tests.proc_evidence import children
from tests.versitygw import VersityServer

BACKEND = "faults"
# Debian's libfaketime (a dependency of the `faketime` package `make sysdeps` installs).
LIBFAKETIME = next(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"), None)
FIOLAKE = Path(sys.executable).with_name("fiolake")
# A short fio run that sleeps more than it computes (rate-limited null engine): the
# nemesis can catch a runner "during fio", and two cores carry several runners.
JOB_FILE = (
    "[faults]\nioengine=null\nrw=randread\nbs=4k\nsize=64M\n"
    "time_based=1\nruntime=500ms\nrate_iops=200\n"
)


@dataclass
class RunnerSlot:
    """One runner id (a host): its current process and what happened to it."""

    runner_id: str
    root: Path
    via_proxy: bool = False
    skewed: bool = False
    proc: subprocess.Popen | None = None
    incarnation: int = 0
    skews: list[int] = field(default_factory=list)
    faked: list[int] = field(default_factory=list)  # pids run under libfaketime

    @property
    def history(self) -> Path:
        return self.root / "history.jsonl"

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def pause_file(self) -> Path:
        return self.root / "pause"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def last_error(self) -> str:
        """The last `Error: …` line of this runner's log ("" if none): why it exited."""
        try:
            lines = (self.root / "runner.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return next((line for line in reversed(lines) if line.startswith("Error: ")), "")

    def fio_child(self) -> int | None:
        """Pid of the fio this runner is running right now, if any."""
        if not self.alive():
            return None
        for pid in children(self.proc.pid):
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "fio":
                    return pid
            except OSError:
                continue
        return None

    def stopped(self) -> bool:
        """Whether the process stopped itself (SIGSTOP at a pause step)."""
        try:
            stat = Path(f"/proc/{self.proc.pid}/stat").read_text()
        except (OSError, AttributeError):
            return False
        return stat.rsplit(")", 1)[1].split()[0] == "T"


class Cluster:
    """A private stack, a proxy in front of its S3 server, runners and a publisher.

    The lake's server is the stack's MinIO, or with `server="versitygw"` a versitygw of its
    own (root keys for every role: versitygw has no per-prefix policies); OpenBao, which
    signs the manifests, is the stack's either way."""

    def __init__(self, root: Path, *, runners: int = 4, ttl_s: float = 4.0, server: str = "minio"):
        self.root = root
        self.server = server
        self.versitygw: VersityServer | None = None
        self.ttl_s = ttl_s
        self.state_dir = root / "stack"
        self.env: StackEnv | None = None
        self.proxy: FaultyProxy | None = None
        self.slots: list[RunnerSlot] = []
        self.published: list[str] = []  # job ids whose manifest PUT succeeded
        self.publish_failures = 0
        self._runners = runners
        self._lock = threading.Lock()
        self.publisher_history = root / "publisher.jsonl"
        self.started_at = time.time()

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        ports = free_ports(4)
        self.env = stack_up(
            self.state_dir,
            minio_port=ports[0],
            console_port=ports[1],
            bao_port=ports[2],
            bao_cluster_port=ports[3],
        )
        lake_port = int(self.env.endpoint.rsplit(":", 1)[1])
        if self.server == "versitygw":
            self.versitygw = VersityServer(self.root / "versitygw", bucket=self.env.bucket)
            self.versitygw.start()
            lake_port = self.versitygw.port
        self.proxy = FaultyProxy(lake_port)
        for i in range(self._runners):
            # r2, r3 reach MinIO through the proxy; the last runner's clock is skewed.
            slot = RunnerSlot(
                f"r{i + 1}",
                self.root / f"r{i + 1}",
                via_proxy=i in (1, 2),
                skewed=i == self._runners - 1,
            )
            (slot.root / "target").mkdir(parents=True, exist_ok=True)
            self.slots.append(slot)
            self.start_runner(slot)

    def stop(self) -> None:
        for slot in self.slots:
            if slot.alive():
                slot.proc.send_signal(signal.SIGCONT)
                slot.proc.kill()
                slot.proc.wait()
        for slot in self.slots:
            # libfaketime preloaded into Python makes /dev/shm segments per process and
            # never unlinks them: every runner it ran in is reaped by now.
            for pid in slot.faked:
                remove_faketime_segments(pid)
        # A runner killed inside libfaketime's sem_open leaves glibc's temp file.
        remove_abandoned_sem_temps(self.started_at)
        if self.proxy is not None:
            self.proxy.close()
        if self.versitygw is not None:
            self.versitygw.stop()
        stack_down(self.state_dir, purge=True)

    def restart_store(self) -> None:
        """Restart the lake's S3 server (a crash and a start; its data stays)."""
        if self.versitygw is not None:
            self.versitygw.restart()
        else:
            restart_minio(self.state_dir)

    def lake_settings(self, role: str = "admin") -> S3Settings:
        """The S3 settings of `role` on the lake's server (root keys on versitygw)."""
        if self.versitygw is not None:
            return self.versitygw.settings
        return self.env.s3_settings(role)

    def runner_env(self, slot: RunnerSlot) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FIOLAKE_", "AWS_"))}
        env.update(self.env.environ("runner"))
        if self.versitygw is not None:
            lake = self.versitygw.settings
            env.update(FIOLAKE_S3_ENDPOINT=lake.endpoint, FIOLAKE_CA_BUNDLE=str(lake.ca_bundle),
                       AWS_ACCESS_KEY_ID=str(lake.access_key),
                       AWS_SECRET_ACCESS_KEY=str(lake.secret_key))  # fmt: skip
        if slot.via_proxy:
            env["FIOLAKE_S3_ENDPOINT"] = f"https://127.0.0.1:{self.proxy.port}"
        # One host lock and one probe cache per cluster (its runners are one "host"): the
        # machine's defaults are shared with the other history test and the container
        # tier's runners, whose fio runs would then take turns with these.
        env["FIOLAKE_HOST_LOCK"] = str(self.root / "host.lock")
        env["FIOLAKE_PROBE_CACHE"] = str(self.root / "store-probe.json")
        env["FIOLAKE_HISTORY"] = str(slot.history)
        env["FIOLAKE_PAUSE_FILE"] = str(slot.pause_file)
        env["FIOLAKE_KEYRING"] = str(slot.root / f"keyring-{slot.incarnation}.json")
        # A runner killed mid-run leaves its output directory (runner.rundirs) where the
        # next incarnation sweeps it: in the cluster's own directory, not the machine's /tmp.
        (self.root / "tmp").mkdir(exist_ok=True)
        env["TMPDIR"] = str(self.root / "tmp")
        return env

    def start_runner(self, slot: RunnerSlot) -> None:
        slot.incarnation += 1
        slot.pause_file.unlink(missing_ok=True)
        argv = [
            str(FIOLAKE),
            "runner",
            "--backend",
            BACKEND,
            "--dir",
            str(slot.root / "target"),
            "--runner-id",
            slot.runner_id,
            "--lease-ttl",
            str(self.ttl_s),
            "--poll",
            "0.3",
            "--spool-dir",
            str(slot.spool),
        ]
        env = self.runner_env(slot)
        if slot.skewed:
            assert LIBFAKETIME is not None, "libfaketime is missing — run `make sysdeps`"
            # A clock running minutes ahead (SigV4 refuses > 15 min; a clock behind would
            # make MinIO's fresh certificate "not yet valid").
            # libfaketime preloaded directly (the `faketime` wrapper would fork, and a
            # kill -9 of the wrapper would leave the runner running).
            skew = random.randint(60, 600)
            slot.skews.append(skew)
            env.update(LD_PRELOAD=str(LIBFAKETIME), FAKETIME=f"+{skew}")
        log = open(slot.root / "runner.log", "ab")  # noqa: SIM115 - owned by the process
        slot.proc = subprocess.Popen(  # noqa: S603
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        if slot.skewed:
            slot.faked.append(slot.proc.pid)
        log.close()

    def kill_runner(self, slot: RunnerSlot) -> None:
        """kill -9 (works on a stopped process too) and reap."""
        if slot.proc is not None:
            slot.proc.kill()
            slot.proc.wait()

    def stop_runners_gracefully(self, timeout_s: float = 60.0) -> None:
        """SIGTERM every runner (finish the current job) and wait for them."""
        for slot in self.slots:
            if slot.alive():
                slot.proc.send_signal(signal.SIGCONT)
                slot.proc.terminate()
        for slot in self.slots:
            if slot.proc is not None:
                try:
                    slot.proc.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    slot.proc.kill()
                    slot.proc.wait()

    # -- stores ----------------------------------------------------------------------
    def store(self, role: str = "admin") -> S3Store:
        return S3Store(self.env.bucket, "", self.lake_settings(role))

    # -- publishing ------------------------------------------------------------------
    def publish_wave(self, campaign_id: str, jobs: int) -> bool:
        """Sign and put `jobs` manifests of a new campaign; False if signing failed
        (OpenBao down), retried by the caller with the same campaign later."""
        store = self.store("publisher")
        manifests = [
            new_manifest(
                campaign_id=campaign_id,
                backend=BACKEND,
                profile="faults",
                job_file_text=JOB_FILE,
                runtime_s=None,
                size_bytes=None,
                repetition=rep,
                bucket=self.env.bucket,
                expires_in=timedelta(hours=2),
            )
            for rep in range(jobs)
        ]
        try:
            signer = Settings.from_env(self.env.environ("publisher")).signer()
            envelopes = sign_manifests(manifests, signer)
        except FiolakeError:
            with self._lock:
                self.publish_failures += 1
            return False
        for manifest, data in zip(manifests, envelopes, strict=True):
            for _ in range(300):  # MinIO may be restarting: retry each PUT
                try:
                    store.put(manifest.key, data, if_none_match=True)
                    break
                except PreconditionFailed:
                    break  # an earlier try landed
                except FiolakeError:
                    time.sleep(0.2)
            _, job_id = layout.parse_job_key(manifest.key)
            with self._lock:
                self.published.append(job_id)
                with open(self.publisher_history, "a") as f:
                    f.write(json.dumps({"type": "ok", "f": "publish", "job_id": job_id}) + "\n")
        return True

    def committed_count(self, store: ObjectStore | None = None) -> int:
        """Commit markers in the lake; `store` reuses one client (a new one costs ~50 ms
        of CPU: the drain's twice-a-second count made one each time)."""
        return sum(1 for _ in (store or self.store()).list(layout.COMMITS_PREFIX))
