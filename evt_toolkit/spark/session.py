"""One local Spark session for evt_toolkit jobs and tests.

Workers must run the driver's interpreter (``PYSPARK_PYTHON = sys.executable``) so they import the same
evt_toolkit; that is set before the session starts. The ``hudi_evt`` data source is registered on every session
this module hands out.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def get_or_create_session(
    master: str = "local[2]",
    app_name: str = "evt-toolkit",
    shuffle_partitions: int = 2,
    extra_conf: dict[str, str] | None = None,
) -> SparkSession:
    """Return the active Spark session or start one tuned for a small machine.

    Args:
        master: Spark master URL (``local[2]`` by default).
        app_name: application name.
        shuffle_partitions: ``spark.sql.shuffle.partitions``.
        extra_conf: additional Spark settings.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Binding to loopback avoids slow host-name lookups on machines without a resolvable network name.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.default.parallelism", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        # The hudi_evt reader prunes file slices by partition filters; Spark refuses it without this switch.
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for k, v in (extra_conf or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _register_sources(spark)
    return spark


def _register_sources(spark: SparkSession) -> None:
    # Imported here, not at the top: this module is imported without starting (or even importing) pyspark.
    from evt_toolkit.spark.datasource import HudiEvtDataSource

    s3a = storage_options_from_spark(spark)
    if s3a:
        # A subclass carries the session's S3A settings into the planner's Python worker (pickled with the class).
        source = type("HudiEvtDataSource", (HudiEvtDataSource,), {"session_storage_options": s3a})
        spark.dataSource.register(source)
        return
    spark.dataSource.register(HudiEvtDataSource)


def storage_options_from_spark(spark: SparkSession) -> dict[str, str]:
    """Storage options from the session's Hadoop S3A settings (``spark.hadoop.fs.s3a.*``), raw S3A keys.

    Returned as the ``spark.hadoop.fs.s3a.*`` pairs themselves (translated by
    :func:`evt_toolkit.storage.options.options_from_hadoop_conf` where the bucket is known).

    Example:
        >>> t = HudiTable.open("s3a://bucket/t", storage_options=options_from_hadoop_conf(
        ...     storage_options_from_spark(spark)))  # doctest: +SKIP
    """
    return {k: v for k, v in spark.sparkContext.getConf().getAll() if k.startswith("spark.hadoop.fs.s3a.")}
