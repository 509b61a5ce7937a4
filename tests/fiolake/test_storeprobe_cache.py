"""The store probe's verdict cache (fiolake.storeprobe) when runners start together."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from fiolake.s3client import S3Settings
from fiolake.store import S3Store
from fiolake.storeprobe import ProbeReport, ProbeStep, _remember

WRITERS = 24
NO_CLIENT = object()


def test_runners_starting_together_each_keep_their_verdict(tmp_path: Path) -> None:
    """Each writer records a pass for its own endpoint at the same moment; read-modify-
    replace without a lock lets a writer's older copy replace another's entry."""
    cache = tmp_path / "cache" / "store-probe.json"
    gate = threading.Barrier(WRITERS)

    def remember(n: int) -> None:
        # The cache's key is the endpoint + bucket; a boto3 client per writer is not needed.
        settings = S3Settings(endpoint=f"https://127.0.0.1:{9000 + n}")
        store = S3Store("lake", "", settings, client=NO_CLIENT)
        step = ProbeStep("create", "PUT sequential If-None-Match: *", "200", True, "2xx")
        report = ProbeReport(store.settings.endpoint, "lake", [step], "2026-11-27T00:00:00+00:00")
        gate.wait()
        _remember(store, report, cache)

    threads = [threading.Thread(target=remember, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    kept = json.loads(cache.read_text())
    assert sorted(kept) == sorted(f"https://127.0.0.1:{9000 + n} lake" for n in range(WRITERS))
    assert sorted(p.name for p in cache.parent.iterdir()) == ["store-probe.json"]
