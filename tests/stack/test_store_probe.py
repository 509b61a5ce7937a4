"""The store probe on real servers: it passes on MinIO, refuses a store that ignores the
conditional headers at the step that shows it, caches a pass, and leaves no scratch keys."""

from __future__ import annotations

import itertools
import json
import re
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake import layout
from fiolake.cli import cli
from fiolake.errors import StoreUnavailable
from fiolake.stack.env import StackEnv
from fiolake.store import LocalStore, S3Store
from fiolake.storeprobe import VERDICT_TTL, cached_report, check_store, probe, require_safe_store
from tests.stack.ignoring_proxy import Misbehaviour, in_front_of
from tests.versitygw import S3Server

STEPS = ["create", "second create", "stale If-Match", "current If-Match", "parallel creates"]
FIX = (
    "fiolake cannot commit exactly once there; use a store that honours conditional writes "
    "(AWS S3, MinIO, Cloudflare R2, versitygw >= 1.1.0, Ceph RGW on RADOS, SeaweedFS >= 4.18) "
    "or a local directory lake (docs/stores.md)"
)


def _lake(stack: StackEnv, endpoint: str | None = None, role: str = "admin") -> S3Store:
    """A fresh lake prefix of the stack's bucket, reached at `endpoint` (default MinIO)."""
    settings = stack.s3_settings(role)
    if endpoint is not None:
        settings = replace(settings, endpoint=endpoint)
    return S3Store(stack.bucket, f"probe-test-{secrets.token_hex(4)}", settings)


def _left(stack: StackEnv, lake: S3Store) -> list[str]:
    """Every key under the lake's prefix, listed at MinIO itself."""
    return list(S3Store(stack.bucket, lake.prefix, stack.s3_settings("admin")).list(""))


def test_the_probe_passes_on_minio_and_removes_its_scratch_prefix(stack: StackEnv) -> None:
    lake = _lake(stack, role="runner")  # the least-privilege role may probe and clean up
    report = probe(lake)
    assert report.passed, report.steps
    assert [s.name for s in report.steps] == STEPS
    assert report.steps[1].got == "412 PreconditionFailed"
    assert report.steps[4].got.startswith("1 × 2xx, 7 × 412/409, 0 × no answer")
    assert _left(stack, lake) == []


@pytest.mark.stack  # a real S3 server
def test_the_probe_passes_on_versitygw_while_other_probes_come_and_go(
    versitygw: S3Server,
) -> None:
    # CI's refusal: a publisher's first create lost versitygw's race against a runner's
    # probe removing its scratch keys, which took the shared probe/ folder with them.
    lake = S3Store(versitygw.bucket, f"probe-test-{secrets.token_hex(4)}", versitygw.settings)
    done = threading.Event()

    def other_probes_scratch() -> None:
        for i in itertools.count():
            if done.is_set():
                return
            lake.put(f"{layout.PROBE_PREFIX}other-{i}/sequential", b"x")
            lake.delete(f"{layout.PROBE_PREFIX}other-{i}/sequential")

    with ThreadPoolExecutor(2) as pool:
        others = [pool.submit(other_probes_scratch) for _ in range(2)]
        try:
            failures = [probe(lake, parallel=2).failure for _ in range(50)]
        finally:
            done.set()
        for other in others:
            other.result()
    assert failures == [""] * 50
    assert list(lake.list("")) == []


def test_the_probe_refuses_a_store_ignoring_if_none_match_at_the_second_create(
    stack: StackEnv, ignoring_endpoint: str
) -> None:
    lake = _lake(stack, ignoring_endpoint)
    report = probe(lake)
    assert [(s.name, s.got[:3], s.ok) for s in report.steps] == [
        ("create", "200", True),
        ("second create", "200", False),
    ]
    assert str(report.refusal()) == (
        f"s3://{stack.bucket} at {ignoring_endpoint} ignores If-None-Match (a second create "
        f"returned 200) — {FIX}"
    )
    assert _left(stack, lake) == []


def test_a_pass_is_cached_per_endpoint_and_bucket_a_refusal_never(
    stack: StackEnv, ignoring_endpoint: str, tmp_path: Path
) -> None:
    cache = tmp_path / "store-probe.json"
    lake = _lake(stack)
    first = check_store(lake, cache)
    assert (first.passed, first.cached) == (True, False)
    again = check_store(_lake(stack), cache)  # another prefix of the same bucket
    assert (again.passed, again.cached, again.checked_at) == (True, True, first.checked_at)
    assert check_store(lake, cache, recheck=True).cached is False
    later = datetime.now(UTC) + VERDICT_TTL + timedelta(seconds=1)
    assert cached_report(lake, cache, now=later) is None  # past the TTL: probe again
    ignoring = _lake(stack, ignoring_endpoint)
    assert check_store(ignoring, cache).passed is False
    assert cached_report(ignoring, cache) is None
    assert check_store(ignoring, cache).cached is False


def _cli(stack: StackEnv, lake: S3Store, args: list[str], tmp: Path):  # noqa: ANN202
    env = {**stack.environ("admin"), "FIOLAKE_S3_ENDPOINT": lake.settings.endpoint,
           "FIOLAKE_LAKE": lake.url, "FIOLAKE_CACHE_DIR": str(tmp / "cache"),
           # this test's own verdicts: the session's file may hold an earlier test's pass
           "FIOLAKE_PROBE_CACHE": str(tmp / "store-probe.json")}  # fmt: skip
    return CliRunner().invoke(cli, args, env=env)


def test_lake_check_store_prints_each_step_and_its_answer(stack: StackEnv, tmp_path: Path) -> None:
    lake = _lake(stack)
    result = _cli(stack, lake, ["lake", "check", "--store", "--format", "csv"], tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "step,sent,got,expected,verdict"
    assert [line.split(",")[0] for line in lines[1:]] == STEPS
    assert all(line.endswith(",ok") for line in lines[1:])
    assert "second create,PUT sequential If-None-Match: *,412 PreconditionFailed," in lines[2]
    assert result.stderr.startswith(
        f"ok: s3://{stack.bucket} at {stack.endpoint} honours If-None-Match and If-Match; "
        "probed in "
    )
    cached = _cli(stack, lake, ["lake", "check", "--store", "--format", "json"], tmp_path)
    data = json.loads(cached.stdout)
    assert (data["passed"], data["cached"], [s["name"] for s in data["steps"]]) == (
        True, True, STEPS
    )  # fmt: skip
    assert "(--recheck to probe again)" in cached.stderr


def test_lake_check_store_refuses_the_ignoring_store_with_exit_2(
    stack: StackEnv, ignoring_endpoint: str, tmp_path: Path
) -> None:
    lake = _lake(stack, ignoring_endpoint)
    result = _cli(stack, lake, ["lake", "check", "--store", "--format", "json"], tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith("Usage: ")  # exit 2 shows the usage line, as click does
    assert result.stderr[result.stderr.index("Error: ") :] == (
        f"Error: s3://{stack.bucket} at {ignoring_endpoint} ignores If-None-Match (a second "
        f"create returned 200) — {FIX}\n"
    )
    steps = json.loads(result.stdout)["steps"]
    assert [(s["name"], s["ok"]) for s in steps] == [("create", True), ("second create", False)]
    assert _left(stack, lake) == []


def test_a_lost_answer_in_the_race_is_never_a_win(stack: StackEnv) -> None:
    """Every racer's answer is cut after MinIO took its PUT: none of them is a 2xx, and
    the probe still finds the one winner by reading the key back."""
    with in_front_of(stack, Misbehaviour(drop=frozenset(), cut="/race")) as endpoint:
        lake = _lake(stack, endpoint)
        report = probe(lake)
    assert report.passed, report.steps
    assert re.fullmatch(
        r"0 × 2xx, 0 × 412/409, 8 × no answer; the key holds racer \d's body",
        report.steps[-1].got,
    )
    assert _left(stack, lake) == []


def test_a_create_whose_answer_was_lost_is_sent_once_and_is_no_verdict(stack: StackEnv) -> None:
    """The first create lands and its answer is cut. Sent again, it would come back 412
    from its own first try and read as a store that refuses If-None-Match (exit 2: a
    runner restarted during a network fault used to stop for good). Sent once, the probe
    has no answer to judge: the store is unavailable (a runner waits and probes again)."""
    seen: list[str] = []
    with in_front_of(stack, Misbehaviour(drop=frozenset(), cut="/sequential"), seen) as endpoint:
        lake = _lake(stack, endpoint)
        with pytest.raises(StoreUnavailable, match=rf"^{lake.prefix}probe/[0-9a-f]+/sequential: "
                           rf"cannot reach https://127\.0\.0\.1:\d+"):  # fmt: skip
            probe(lake)
    puts = [request for request in seen if request.startswith("PUT ")]
    assert len(puts) == 1 and puts[0].endswith("/sequential"), seen
    assert _left(stack, lake) == []


def test_a_race_that_reaches_no_store_is_no_verdict(stack: StackEnv) -> None:
    """No racer's create reaches MinIO (hung up before forwarding, as while it restarts):
    the key is absent and nobody answered. That says nothing about conditional writes, so
    the probe raises StoreUnavailable instead of calling the store unsafe."""
    with in_front_of(stack, Misbehaviour(drop=frozenset(), lose="/race")) as endpoint:
        lake = _lake(stack, endpoint)
        with pytest.raises(StoreUnavailable, match=rf"^{lake.prefix}probe/[0-9a-f]+/race: "
                           rf"cannot reach https://127\.0\.0\.1:\d+"):  # fmt: skip
            probe(lake)
    assert _left(stack, lake) == []


def test_a_local_directory_lake_needs_no_probe(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["lake", "check", "--store", "--lake", str(tmp_path)])
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == (
        f"ok: {tmp_path} is a local directory — fiolake's own create-only and "
        "compare-and-swap writes, no store probe needed\n"
    )
    require_safe_store(LocalStore(tmp_path / "lake"), tmp_path / "cache.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing probed, nothing cached
