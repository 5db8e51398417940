"""One local Spark session for evt_toolkit jobs and tests.

Workers must run the driver's interpreter (``PYSPARK_PYTHON = sys.executable``) so they import the same
evt_toolkit; that is set before the session starts. The ``hudi_evt`` data source is registered on every session
this module hands out.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

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

    # A subclass carries the session's S3A and file-packing settings into the planner's Python worker (pickled
    # with the class).
    source = type("HudiEvtDataSource", (HudiEvtDataSource,), session_source_attributes(spark))
    spark.dataSource.register(source)


def session_source_attributes(spark: SparkSession) -> dict[str, Any]:
    """What a ``hudi_evt`` source class needs of the session: its S3A settings and file-scan packing settings."""
    from evt_toolkit.spark.splits import split_conf_from_spark

    return {
        "session_storage_options": storage_options_from_spark(spark),
        "session_split_conf": split_conf_from_spark(spark),
    }


def storage_options_from_spark(spark: SparkSession) -> dict[str, str]:
    """Storage options from the session's Hadoop S3A settings (``spark.hadoop.fs.s3a.*``), raw S3A keys.

    Returned as the ``spark.hadoop.fs.s3a.*`` pairs themselves (translated by
    :func:`evt_toolkit.storage.options.options_from_hadoop_conf` where the bucket is known).

    Example:
        >>> t = HudiTable.open("s3a://bucket/t", storage_options=options_from_hadoop_conf(
        ...     storage_options_from_spark(spark)))  # doctest: +SKIP
    """
    return {k: v for k, v in spark.sparkContext.getConf().getAll() if k.startswith("spark.hadoop.fs.s3a.")}
