"""Spark on S3: the hudi_evt source reads an S3 table with storage options, and a compaction runs as Spark tasks."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.compaction.validate import validate_compaction
from tests.conftest import S3Server
from tests.faults import oracle_of
from tests.s3.test_s3_tables import HISTORY, _check, _strategy, _written
from tests.tables import COLUMNS, same

pytestmark = pytest.mark.spark


def test_spark_read_and_compaction_on_s3(spark, s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t, _ = _written(s3_server, s3_bucket, tmp_path)
    expected = oracle_of(HISTORY)
    reader = spark.read.format("hudi_evt")
    for k, v in s3_server.options.items():
        reader = reader.option(k, v)
    df = reader.load(t.path.replace("s3a://", "s3://"))
    got = pa.Table.from_pandas(df.select(*COLUMNS).toPandas(), preserve_index=False)
    same(got, expected, "Spark snapshot on S3")

    # Hadoop S3A spellings work too (what spark.hadoop.fs.s3a.* carries).
    host = s3_server.endpoint.split("://", 1)[1]
    s3a = (
        spark.read.format("hudi_evt")
        .option("fs.s3a.endpoint", host)
        .option("fs.s3a.connection.ssl.enabled", "false")
        .option("fs.s3a.access.key", s3_server.options["aws_access_key_id"])
        .option("fs.s3a.secret.key", s3_server.options["aws_secret_access_key"])
        .option("aws_region", "us-east-1")
        .load(t.path)
    )
    assert s3a.count() == expected.num_rows

    c = schedule_compaction(t, _strategy(), link_mode="copy")
    assert c is not None
    run_compaction(t, c.instant, spark=spark)
    assert validate_compaction(t, c.instant).ok
    _check(t, s3_server.options, expected, "compacted on Spark")
