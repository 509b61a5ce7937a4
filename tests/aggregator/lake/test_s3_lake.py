"""The same views, compaction and queries over a real MinIO (TLS, private CA)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from fiolake import layout
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.stats.compare import compare
from fiolake.errors import AccessDenied
from fiolake.store import open_store
from tests.aggregator import lakegen

pytestmark = pytest.mark.stack
READ = ("job1", "read")
FINGERPRINT = """
    SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM results),
           (SELECT count(*) FROM timeseries), (SELECT sum(iops) FROM results),
           (SELECT count(*) FROM commits)
"""


def test_s3_lake_views_compare_and_compaction(stack) -> None:  # noqa: ANN001
    url = f"{stack.lake}/agg-{secrets.token_hex(4)}"
    admin, analyst = stack.s3_settings("admin"), stack.s3_settings("analyst")
    store = open_store(url, admin)
    backends = {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 800}}}
    lakegen.write_campaign(store, "c1", backends, 3, jitter=0.02)
    lakegen.write_run(store, run_id="lost", job_id="c1-a-j0", commit=False)

    with connect(url, analyst) as lake:  # read-only credentials are enough to read
        before = lake.con.sql(FINGERPRINT).fetchone()
        assert before == (6, 6, 18, pytest.approx(5400.0, rel=0.01), 6)
        verdicts = {r.group: r.verdict for r in compare(lake, metrics=["iops"]).rows}
        assert verdicts == {"a": "baseline", "b": "worse"}
        with pytest.raises(Exception, match="disabled"):
            lake.con.sql("SELECT * FROM read_csv('/etc/hostname')").fetchall()

    with pytest.raises(AccessDenied, match="access denied"):
        compact(open_store(url, analyst), grace=timedelta(0))
    report = compact(store, grace=timedelta(0))
    assert report.generation is not None and len(report.merged) == 6  # 4 tables, 2 derived
    store.put("scratch/x", b"1")
    assert store.location("scratch/x") == f"{url}/scratch/x"
    store.delete("scratch/x")
    assert store.head("scratch/x") is None
    store.delete("scratch/x")  # gone already is fine
    with connect(url, analyst) as lake:
        assert lake.con.sql(FINGERPRINT).fetchone() == before
        assert all(k.startswith("compacted/") for keys in lake.files.values() for k in keys)
    # A second compaction supersedes the first generation: deleted through the store.
    lakegen.write_run(store, run_id="late", job_id="c1-late")
    again = compact(store, grace=timedelta(0))
    assert layout.generation_key(1) in again.removed
    assert again.cleanup_errors == [] and store.head(layout.generation_key(1)) is None


def test_compact_prune_and_reads_on_each_real_server(s3_server) -> None:  # noqa: ANN001
    """`lake compact` and `lake prune` through the CLI (store probe first) on MinIO and on
    versitygw; the views read the same rows before and after; a second compaction removes
    the superseded generation."""
    from click.testing import CliRunner

    from fiolake.cli import cli

    url = f"s3://{s3_server.bucket}/agg-{secrets.token_hex(4)}"
    store = open_store(url, s3_server.settings)
    lakegen.write_campaign(store, "c1", {"a": {READ: {"iops": 1000}}}, 3, jitter=0.02)
    with connect(url, s3_server.settings) as lake:
        before = lake.con.sql(FINGERPRINT).fetchone()
    env = {**s3_server.environ(), "FIOLAKE_LAKE": url}
    compacted = CliRunner().invoke(cli, ["lake", "compact", "--grace", "0s"], env=env)
    assert compacted.exit_code == 0, compacted.output
    assert compacted.stderr.startswith("generation 1: appended 18 run(s) × table to 6 Delta")
    with connect(url, s3_server.settings) as lake:
        assert lake.con.sql(FINGERPRINT).fetchone() == before
        assert all(k.startswith("compacted/") for keys in lake.files.values() for k in keys)
    pruned = CliRunner().invoke(cli, ["lake", "prune", "--keep-timeseries", "1d"], env=env)
    assert pruned.exit_code == 0, pruned.output
    assert pruned.stderr.startswith("deleted 9 timeseries row(s)"), pruned.stderr
    lakegen.write_run(store, run_id="late", job_id="c1-late")
    again = CliRunner().invoke(cli, ["lake", "compact", "--grace", "0s"], env=env)
    assert again.exit_code == 0, again.output
    assert store.head(layout.generation_key(1)) is None
    assert not list(store.list(layout.PROBE_PREFIX))  # the probe's scratch keys are gone


@pytest.mark.stack
def test_an_aws_profile_alone_reaches_duckdb_and_delta_rs(stack, tmp_path) -> None:  # noqa: ANN001
    """Issue 42: with AWS_PROFILE and no keys in the environment, `lake compact` (boto3 and
    delta-rs) and `fiolake sql` (DuckDB) all use the profile's keys; a profile without
    keys is refused, exit 2. Real processes: botocore reads the profile files once per
    process, and this one has read them already."""
    settings = stack.s3_settings("admin")
    url = f"{stack.lake}/profile-{secrets.token_hex(4)}"
    lakegen.write_campaign(open_store(url, settings), "c1", {"a": {READ: {"iops": 10}}}, 2)
    files = tmp_path / "credentials"
    files.write_text(
        f"[lake]\naws_access_key_id = {settings.access_key}\n"
        f"aws_secret_access_key = {settings.secret_key}\n[empty]\nregion = us-east-1\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "FIOLAKE_"))}
    env |= {k: v for k, v in stack.environ("admin").items() if not k.startswith("AWS_")}
    env |= {"FIOLAKE_LAKE": url, "AWS_PROFILE": "lake", "AWS_SHARED_CREDENTIALS_FILE": str(files),
            "AWS_CONFIG_FILE": str(tmp_path / "no-config")}  # fmt: skip
    fiolake = str(Path(sys.executable).with_name("fiolake"))

    def run(*args: str, profile: str = "lake") -> subprocess.CompletedProcess[str]:
        return subprocess.run([fiolake, *args], env={**env, "AWS_PROFILE": profile},
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    compacted = run("lake", "compact", "--grace", "0s")
    assert compacted.returncode == 0, compacted.stderr
    counted = run("sql", "SELECT count(*) AS n FROM runs", "--format", "csv")
    assert (counted.returncode, counted.stdout) == (0, "n\n2\n"), counted.stderr
    empty = run("sql", "SELECT 1", profile="empty")
    assert empty.returncode == 2
    assert empty.stderr.splitlines()[-1].startswith(
        "Error: AWS_PROFILE empty: the profile holds no credentials — name a profile of "
    )
