"""A local Spark session with Delta Lake, as the `spark` test tier and benchmarks use it."""

from __future__ import annotations

import os
from typing import Any


def start_spark(
    app: str,
    driver_memory: str = "1g",
    *,
    conf: dict[str, str] | None = None,
    packages: list[str] | None = None,
) -> Any:
    """Spark 4.2 local[2] with Delta 4.4 (jars from Maven Central on first use, cached in
    ~/.ivy2.5.2), UTC session time zone, no UI; ImportError without the `spark` extra.
    `conf` and `packages` add settings and Maven packages (fixed once the JVM starts)."""
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", "2")
        # Delta rebuilds a table's state in 50 tasks by default: 2 suffice on 2 cores.
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return configure_spark_with_delta_pip(builder, extra_packages=packages).getOrCreate()


def stop_spark(session: Any, timeout_s: float = 60.0) -> None:
    """Stop `session` and its JVM, and wait until the JVM has exited.

    `SparkSession.stop()` leaves the JVM running until the Python process that started it
    exits (it waits for EOF on its stdin), so a session fixture's JVM outlived the test
    session and was, by a race, reported by the hygiene check. Closing its stdin ends it.
    """
    import subprocess

    from pyspark import SparkContext

    gateway = SparkContext._gateway
    session.stop()
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is None:
        return
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
