"""Benchmark `fiolake import`: N distinct fio JSON documents into a local lake, and with
--minio into a throwaway MinIO (TLS) stack started for it, with the runner role's keys.

One document is made with fio's null engine, then copied N times with its timestamps
moved one second apart (each copy is distinct content, so each is a run). Prints the
seconds each import took and runs per second. Goals (issue 33): 1,000 in < 30 s into a
local lake, < 60 s into MinIO.

    python tests/bench/import_docs.py --docs 1000 --minio
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOB = "[a]\nioengine=null\nrw=randread\nbs=4k\nsize=64m\n[b]\nioengine=null\nrw=write\nsize=32m\n"


def main() -> int:
    """Make the documents, import them once, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1000, help="documents to import")
    parser.add_argument("--lake", help="lake to import into (default: a fresh temp dir)")
    parser.add_argument("--minio", action="store_true", help="also into a throwaway MinIO")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fiolake-import-bench-") as tmp:
        root = Path(tmp)
        (root / "job.fio").write_text(JOB)
        out = subprocess.run(
            ["fio", "--output-format=json+", str(root / "job.fio")],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        doc = json.loads(out)
        docs = root / "docs"
        docs.mkdir()
        for i in range(args.docs):
            doc["timestamp"] += 1
            doc["timestamp_ms"] += 1000
            (docs / f"run-{i:05d}.json").write_text(json.dumps(doc))
        failed = _timed(docs, args.lake or str(root / "lake"), args.docs, {})
        if args.minio and not failed:
            failed = _into_minio(root, docs, args.docs)
    return failed


def _timed(docs: Path, lake: str, count: int, env: dict[str, str]) -> int:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fiolake", "import", str(docs), "--backend", "bench",
         "--lake", lake, "--format", "csv"],
        capture_output=True, text=True, env={**os.environ, **env},
    )  # fmt: skip
    took = time.monotonic() - start
    if done.returncode != 0 or done.stdout.count(",imported") != count:
        print(done.stderr, file=sys.stderr)
        return 1
    print(f"imported {count} documents into {lake} in {took:.1f} s ({count / took:.0f} runs/s)")
    return 0


def _into_minio(root: Path, docs: Path, count: int) -> int:
    from fiolake.stack.local import stack_down, stack_up
    from fiolake.stack.process import free_ports

    state = root / "stack"
    minio, console, bao, cluster = free_ports(4)
    stack = stack_up(
        state, minio_port=minio, console_port=console, bao_port=bao, bao_cluster_port=cluster
    )
    try:
        return _timed(docs, f"{stack.lake}/bench-import", count, stack.environ("runner"))
    finally:
        stack_down(state, purge=True)


if __name__ == "__main__":
    sys.exit(main())
