"""Spark reads the compacted Delta tables of a lake on each real S3 server (MinIO and
versitygw) through s3a over TLS, row for row as `fiolake sql` reads them there (issue 42).

Spark runs in a process of its own (tests/spark_s3_read.py): the server's private CA goes
into the JVM's trust store and hadoop-aws onto its class path, both fixed at JVM start.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import connect
from fiolake.store import S3Store
from tests.aggregator import lakegen
from tests.aggregator.answer_rows import canonical
from tests.versitygw import S3Server

pytestmark = [pytest.mark.spark, pytest.mark.stack, pytest.mark.slow]
TABLES = ["runs", "results", "timeseries", "percentiles", "commits"]  # what lakegen writes
TRUSTSTORE_PASSWORD = "changeit"  # the JDK store's own, which the copy keeps


def _truststore(ca: str, where: Path) -> Path:
    """The JDK's own trust store plus the server's CA. Only the CA would do for the
    server, but the same JVM fetches hadoop-aws and delta-spark from Maven Central on
    first use, whose certificates (and on this workplace's machines a proxy's) only the
    JDK's store holds: a fresh machine failed both tests so, PKIX path building failed."""
    keytool = shutil.which("keytool")
    if keytool is None:
        pytest.skip("keytool (Java) is not installed: `make sysdeps` installs openjdk-17")
    cacerts = Path(keytool).resolve().parents[1] / "lib" / "security" / "cacerts"
    store = where / "trust.jks"
    shutil.copyfile(cacerts, store)  # follows Debian's link to /etc/ssl/certs/java/cacerts
    subprocess.run(
        [keytool, "-importcert", "-noprompt", "-alias", "fiolake-ca", "-file", ca,
         "-keystore", str(store), "-storepass", TRUSTSTORE_PASSWORD],
        check=True, capture_output=True,
    )  # fmt: skip
    return store


@pytest.mark.timeout(600)
def test_spark_reads_the_delta_tables_on_each_s3_server(
    s3_server: S3Server, tmp_path: Path
) -> None:
    pytest.importorskip("delta", reason="delta-spark missing: pip install -e '.[spark]'")
    settings = s3_server.settings
    prefix = f"spark-{secrets.token_hex(4)}"
    store = S3Store(s3_server.bucket, prefix, settings)
    metrics = {"a": {("j", "read"): {"iops": 1000}}, "b": {("j", "read"): {"iops": 800}}}
    lakegen.write_campaign(store, "c1", metrics, 2)
    compact(store, grace=timedelta(0))
    spec = {
        "endpoint": settings.endpoint,
        "access_key": settings.access_key,
        "secret_key": settings.secret_key,
        "truststore": str(_truststore(str(settings.ca_bundle), tmp_path)),
        "truststore_password": TRUSTSTORE_PASSWORD,
        "lake": f"s3a://{s3_server.bucket}/{prefix}",
        "tables": TABLES,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    out = tmp_path / "read"
    out.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tests.spark_s3_read", str(tmp_path / "spec.json"), str(out)],
        capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    with connect(f"s3://{s3_server.bucket}/{prefix}", settings) as lake:
        for table in TABLES:
            ours = lake.con.execute(f"SELECT * FROM {table}").to_arrow_table()
            theirs = pq.read_table(out / f"{table}.parquet")
            assert ours.num_rows > 0, table
            cols = ours.column_names
            assert theirs.column_names == cols, table
            assert canonical(theirs, cols) == canonical(ours, cols), table
