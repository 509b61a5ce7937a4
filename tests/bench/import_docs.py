"""Benchmark `fiolake import`: N distinct fio JSON documents into a local lake.

One document is made with fio's null engine, then copied N times with its timestamps
moved one second apart (each copy is distinct content, so each is a run). Prints the
seconds the import took and runs per second. Goal (issue 33): 1,000 in < 30 s locally.

    python tests/bench/import_docs.py --docs 1000
"""

from __future__ import annotations

import argparse
import json
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
        lake = args.lake or str(root / "lake")
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "fiolake", "import", str(docs), "--backend", "bench",
             "--lake", lake, "--format", "csv"],
            capture_output=True, text=True,
        )  # fmt: skip
        took = time.monotonic() - start
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return 1
        print(f"imported {args.docs} documents into {lake} in {took:.1f} s "
              f"({args.docs / took:.0f} runs/s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
