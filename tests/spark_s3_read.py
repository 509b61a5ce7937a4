"""Spark reads the Delta tables of an S3 lake through s3a, in its own process.

Run by tests/aggregator/lake/test_spark_s3.py as `python -m tests.spark_s3_read SPEC OUT`:
SPEC is a JSON file naming the endpoint, keys, a Java trust store holding the server's
private CA (and the JDK's own CAs, for Maven Central) with its password, the lake URL
(s3a://bucket/prefix) and the tables; OUT a folder that gets one Parquet file per table
as Spark read it. A process of its own because the JVM's trust
store and the hadoop-aws jar are fixed when Spark's JVM starts, and the session-wide
`spark` fixture's JVM reads local lakes only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from fiolake.aggregator.lake import engines
from tests.spark_session import start_spark, stop_spark

# Spark 4.2 ships Hadoop 3.5.0: the s3a connector of that version (it pulls in the AWS
# SDK v2 bundle, ~650 MB, from Maven Central on first use; cached in ~/.ivy2.5.2).
HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.5.0"


def main(spec_path: str, out: str) -> None:
    """Read every table of the spec's lake with Spark and write what it read to `out`."""
    spec = json.loads(Path(spec_path).read_text())
    trust = (
        f"-Djavax.net.ssl.trustStore={spec['truststore']} "
        f"-Djavax.net.ssl.trustStorePassword={spec['truststore_password']}"
    )
    s3a = {
        "endpoint": spec["endpoint"],
        "endpoint.region": "us-east-1",
        "path.style.access": "true",
        "access.key": spec["access_key"],
        "secret.key": spec["secret_key"],
        "connection.ssl.enabled": "true",
    }
    conf = {f"spark.hadoop.fs.s3a.{k}": v for k, v in s3a.items()}
    conf["spark.driver.extraJavaOptions"] = trust
    spark = start_spark("fiolake-s3a", conf=conf, packages=[HADOOP_AWS])
    try:
        for table in spec["tables"]:
            spark.sql(engines.register_delta("spark", spec["lake"], table))
            pq.write_table(spark.table(table).toArrow(), Path(out) / f"{table}.parquet")
    finally:
        stop_spark(spark)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
