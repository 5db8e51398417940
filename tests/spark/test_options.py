"""``hudi_evt`` option parsing and the catalog entries' table type.

* a misspelled ``hoodie.*`` option is refused with the closest known name (reads and writes), in the parser and
  through a real ``spark.read``;
* an incremental read without a begin instant is refused as Hudi's ``IncrementalRelation`` refuses it, while
  ``earliest`` reads from the start;
* the catalog stores the synced ``__evt_source`` tables as EXTERNAL, and dropping one leaves the Hudi table whole.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evt_toolkit as evt
from evt_toolkit.errors import ReadError, WriteError

pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")

from evt_toolkit.spark.datasource import ReadOptions, WriteOptions

QUERY_TYPE = "hoodie.datasource.query.type"
BEGIN = "hoodie.datasource.read.begin.instanttime"


def _table(path: Path) -> evt.HudiTable:
    t = evt.HudiTable.create(path, "opts", "id", partition_by="region", ordering_field="ts", buckets=1)
    t.write(pd.DataFrame({"id": [1, 2, 3], "region": ["a", "a", "b"], "ts": [1, 1, 1]}))
    t.write(pd.DataFrame({"id": [3, 4], "region": ["b", "b"], "ts": [2, 2]}))
    return t


def test_misspelled_read_option_names_the_right_one() -> None:
    with pytest.raises(
        ReadError, match=r"'hoodie\.datasource\.query\.typ'; did you mean 'hoodie\.datasource\.query\.type'"
    ):
        ReadOptions.from_options({"path": "/t", "hoodie.datasource.query.typ": "incremental"})
    with pytest.raises(ReadError, match=re.escape("did you mean 'hoodie.datasource.read.begin.instanttime'")):
        ReadOptions.from_options(
            {"path": "/t", QUERY_TYPE: "incremental", "hoodie.datasource.read.begin.instantime": "1"}
        )
    # Options Hudi uses only to list files do not change the answer: accepted.
    assert ReadOptions.from_options({"path": "/t", "hoodie.metadata.enable": "true"}).query_type == "snapshot"


def test_misspelled_write_option_names_the_right_one() -> None:
    with pytest.raises(WriteError, match=re.escape("did you mean 'hoodie.datasource.write.recordkey.field'")):
        WriteOptions.from_options({"path": "/t", "hoodie.datasource.write.recordkey.feild": "id"})


def test_incremental_needs_a_begin_instant_as_in_hudi() -> None:
    with pytest.raises(ReadError, match=f"Specify the begin instant time to pull from using option {BEGIN}"):
        ReadOptions.from_options({"path": "/t", QUERY_TYPE: "incremental"})
    for start in ("earliest", "000"):
        assert ReadOptions.from_options({"path": "/t", QUERY_TYPE: "incremental", BEGIN: start}).begin is None
    assert ReadOptions.from_options({"path": "/t", QUERY_TYPE: "incremental", BEGIN: "20250101"}).begin == (
        "20250101000000"
    )


@pytest.mark.spark
def test_spark_refuses_bad_options_and_reads_from_earliest(tmp_path: Path, spark: Any) -> None:
    t = _table(tmp_path / "t")
    with pytest.raises(Exception, match=re.escape("did you mean 'hoodie.datasource.query.type'")):
        spark.read.format("hudi_evt").option("hoodie.datasource.query.typ", "incremental").load(t.path).count()
    with pytest.raises(Exception, match="Specify the begin instant time"):
        spark.read.format("hudi_evt").option(QUERY_TYPE, "incremental").load(t.path).count()
    everything = spark.read.format("hudi_evt").option(QUERY_TYPE, "incremental").option(BEGIN, "earliest")
    assert everything.load(t.path).count() == t.read("incremental").num_rows == 4


@pytest.mark.spark
def test_catalog_stores_the_source_tables_as_external(tmp_path: Path, spark: Any) -> None:
    from evt_toolkit.spark.catalog import stored_table_type, sync_catalog

    t = _table(tmp_path / "t")
    sync = sync_catalog(spark, t, name="opts_ext")
    assert sync.source_table_type == "EXTERNAL"
    for view in (sync.ro_table, sync.rt_table):
        assert stored_table_type(spark, view + "__evt_source") == "EXTERNAL"
        props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {view}").collect()}
        assert props["evt.source.table.type"] == "EXTERNAL"
    spark.sql(f"DROP TABLE {sync.rt_table}__evt_source")
    assert evt.HudiTable.open(t.path).read().num_rows == 4  # the entry went, the files stayed
