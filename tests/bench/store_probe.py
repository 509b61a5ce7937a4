"""Store-probe benchmark (a script, not a test): what the probe costs a writing command.

    eval "$(fiolake stack env)"; .venv/bin/python -m tests.bench.store_probe [--trials 10]

Against the S3 lake of FIOLAKE_LAKE/FIOLAKE_S3_ENDPOINT (admin keys in AWS_*): the full
probe (5 steps, 8 parallel creates, the scratch prefix removed) --trials times, then the
cached verdict a runner start reads instead (a JSON file) as many times. A runner pays
the probe once when it starts (the verdict is then cached for 24 h), never per job.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path[0] = str(Path(__file__).resolve().parents[2])

from fiolake.config import Settings
from fiolake.store import S3Store
from fiolake.storeprobe import check_store, probe


def _summary(label: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    return (
        f"{label}: median {statistics.median(ms):.1f} ms, min {ms[0]:.1f} ms, "
        f"max {ms[-1]:.1f} ms ({len(ms)} trials)"
    )


def main() -> None:
    """Measure the probe and the cached verdict; print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    store = Settings.from_env().store()
    if not isinstance(store, S3Store):
        sys.exit('set FIOLAKE_LAKE=s3://… and FIOLAKE_S3_ENDPOINT (eval "$(fiolake stack env)")')
    full = []
    for _ in range(args.trials):
        started = time.perf_counter()
        report = probe(store)
        full.append(time.perf_counter() - started)
        if not report.passed:
            sys.exit(f"the probe failed: {report.failure}")
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "store-probe.json"
        check_store(store, cache)
        cached = []
        for _ in range(args.trials):
            started = time.perf_counter()
            assert check_store(store, cache).cached
            cached.append(time.perf_counter() - started)
    print(f"store {store.url} at {store.settings.endpoint}")
    print(_summary("full probe (once per runner start, then cached 24 h)", full))
    print(_summary("cached verdict (each later start)", cached))


if __name__ == "__main__":
    main()
