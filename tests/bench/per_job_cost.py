"""Benchmark: CPU seconds per job of the runner and of MinIO, beside fio's own cost.

One runner process works through --jobs tiny null-engine jobs on its own stack; from
/proc/<pid>/stat (10 ms ticks) it prints, per job:
  - the runner's own CPU (utime + stime, all threads, no children),
  - fio's CPU (the runner's reaped children: cutime + cstime; `--parse-only` is cached),
  - MinIO's CPU over the same interval.
Also prints `fio --version`'s own cost as the floor of one fio start.

    .venv/bin/python -m tests.bench.per_job_cost [--jobs 50]
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a script
    sys.path[0] = str(Path(__file__).resolve().parents[2])

import argparse  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from fiolake.stack.local import stack_down, stack_up  # noqa: E402
from fiolake.stack.process import free_ports  # noqa: E402

TICK_S = 1 / os.sysconf("SC_CLK_TCK")
NULL_JOB = "[n]\nioengine=null\nrw=randread\nbs=4k\nsize=1M\n"


def cpu(pid: int) -> tuple[float, float]:
    """(own utime + stime, reaped children's cutime + cstime) of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) * TICK_S
    children = (int(fields[13]) + int(fields[14])) * TICK_S
    return own, children


def fio_start_cost(trials: int = 20) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(trials):
        subprocess.run(["fio", "--version"], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fiolake-bench-cost-") as tmp:
        root = Path(tmp)
        ports = dict(zip(("minio_port", "console_port", "bao_port", "bao_cluster_port"),
                         free_ports(4), strict=True))  # fmt: skip
        stack = stack_up(root / "stack", **ports)
        try:
            minio_pid = int((root / "stack" / "minio.pid").read_text().split()[0])
            env = {**os.environ, **stack.environ("runner"), "FIOLAKE_LAKE": f"{stack.lake}/cost"}
            env["FIOLAKE_KEYRING"] = str(root / "keyring.json")
            publisher = {**os.environ, **stack.environ("publisher"), "FIOLAKE_SIGNER": "vault"}
            publisher["FIOLAKE_LAKE"] = env["FIOLAKE_LAKE"]
            job = root / "null.fio"
            job.write_text(NULL_JOB)
            subprocess.run(
                [sys.executable, "-m", "fiolake", "publish", str(job), "--backend", "b",
                 "--repeat", str(args.jobs)],
                env=publisher, check=True, capture_output=True,
            )  # fmt: skip
            target = root / "target"
            target.mkdir()
            runner = subprocess.Popen(
                [sys.executable, "-m", "fiolake", "runner", "--backend", "b", "--create-dir",
                 "--dir",
                 str(target), "--runner-id", "cost", "--spool-dir", str(root / "spool"),
                 "--max-jobs", str(args.jobs), "--poll", "0.2"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            time.sleep(1.5)  # past interpreter start-up and imports: count the job loop
            own0, kids0 = cpu(runner.pid)
            minio0 = cpu(minio_pid)[0]
            last = (own0, kids0, minio0)
            while runner.poll() is None:
                try:
                    own, kids = cpu(runner.pid)
                    last = (own, kids, cpu(minio_pid)[0])
                except (FileNotFoundError, ProcessLookupError):
                    break
                time.sleep(0.05)
            own, kids, minio = last
            per = args.jobs
            print(
                f"per job over {args.jobs} jobs: runner {(own - own0) / per:.3f} CPU-s, "
                f"fio {(kids - kids0) / per:.3f} CPU-s (children reaped so far), "
                f"MinIO {(minio - minio0) / per:.3f} CPU-s; one `fio --version` costs "
                f"{fio_start_cost():.3f} CPU-s"
            )
        finally:
            stack_down(root / "stack", purge=True)


if __name__ == "__main__":
    main()
