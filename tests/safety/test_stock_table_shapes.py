"""Table settings stock Hudi writes into ``hoodie.properties`` that change where or how records are stored.

Drives the writer on tables of each writable version (6 and 9) whose ``hoodie.properties`` carries a setting stock
Hudi tables have, and checks that each write either puts the records where stock Hudi writers and readers look for
them or is refused with an ``EvtError`` naming the table before anything is written (every byte of the table
unchanged):

* ``hoodie.datasource.write.partitionpath.urlencode=true``: Hudi's writers escape partition values
  (``PartitionPathEncodeUtils.escapePathName``: ``x:y`` → ``x%3Ay``), so a record written under the raw value would
  land in another partition folder than the one its key lives in under a stock writer — two live copies of one key;
* a complex key generator with a single record key field (what ``HudiTable.create`` makes of one key and several
  partition fields, and what stock tables keyed by one column with ``ComplexKeyGenerator`` are): Hudi's
  ``ComplexAvroKeyGenerator`` stores ``id:1`` (``KeyGenUtils.encodeSingleKeyFieldNameForComplexKeyGen``: always on
  version 9, by default before), so a writer storing ``1`` makes a second live record beside every key a stock writer
  wrote, and its own index never finds theirs. A table whose stored keys are bare values (written that way before)
  keeps being written so, and an encoding the table records (newer Hudi writers do) wins. The Spark DataFrame
  write keys its rows the same way (``EVT_STOCK_SHAPES_SPARK=1``, about a minute of Spark).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.errors import EvtError
from evt_toolkit.format.properties import dump_properties, parse_properties


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _set_properties(path: Path, **changes: str) -> None:
    f = path / ".hoodie" / "hoodie.properties"
    props = parse_properties(f.read_text())
    props.update(changes)
    f.write_text(dump_properties(props))


def _rows(region: str) -> pa.Table:
    return pa.table(
        {"id": pa.array([1, 2], pa.int64()), "region": [region, region], "ts": pa.array([5, 6], pa.int64())}
    )


@pytest.mark.parametrize("version", [6, 9])
def test_url_encoded_partition_paths_are_written_encoded_or_refused(tmp_path: Path, version: int) -> None:
    path = tmp_path / "t"
    evt.HudiTable.create(path, "t", "id", partition_by="region", ordering_field="ts", table_version=version)
    _set_properties(path, **{"hoodie.datasource.write.partitionpath.urlencode": "true"})
    t = evt.HudiTable.open(path)
    before = _files(path)
    try:
        t.write(_rows("x:y"))
    except EvtError as e:
        assert str(path) in str(e), f"the refusal does not name the table: {e}"
        assert _files(path) == before, "a refused write changed the table"
        return
    folders = {p.parent.name for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    assert "region=x%3Ay" in folders and "region=x:y" not in folders, f"records written under {folders}"


def _keys(t: evt.HudiTable) -> list[str]:
    return sorted(t.refresh().read(columns=["_hoodie_record_key"])["_hoodie_record_key"].to_pylist())


def _day_rows(ids: list[int], ts: int) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": ["eu"] * n,
            "day": ["d1"] * n,
            "ts": pa.array([ts] * n, pa.int64()),
        }
    )


@pytest.mark.parametrize("version", [6, 8, 9])
def test_single_field_complex_keys_are_stored_as_hudi_stores_them(tmp_path: Path, version: int) -> None:
    path = tmp_path / "t"
    t = evt.HudiTable.create(
        path, "t", "id", partition_by=["region", "day"], ordering_field="ts", table_version=version
    )
    assert "ComplexKeyGenerator" in (t.properties.get("hoodie.table.keygenerator.class") or "ComplexKeyGenerator")
    t.write(_day_rows([1, 2], 5))
    assert _keys(t) == ["id:1", "id:2"], "the single-field complex key is not stored as Hudi's key generator stores it"
    t.write(_day_rows([1], 6))
    assert _keys(t) == ["id:1", "id:2"], "an update made a second record"


@pytest.mark.parametrize("version", [6, 9])
def test_bare_single_field_complex_keys_stay_bare(tmp_path: Path, version: int) -> None:
    """A table whose existing records carry bare keys (``hoodie.write.complex.keygen.new.encoding=true``, or an older
    writer) is updated under those keys, never beside them."""
    path = tmp_path / "t"
    t = evt.HudiTable.create(
        path, "t", "id", partition_by=["region", "day"], ordering_field="ts", table_version=version
    )
    keygen = "hoodie.table.keygenerator.class" if version == 6 else "hoodie.table.keygenerator.type"
    simple = "org.apache.hudi.keygen.SimpleKeyGenerator" if version == 6 else "SIMPLE"
    complex_ = t.properties[keygen]
    _set_properties(path, **{keygen: simple})  # the bare keys a writer of that encoding stores
    evt.HudiTable.open(path).write(_day_rows([1, 2], 5))
    _set_properties(path, **{keygen: complex_})
    t = evt.HudiTable.open(path)
    assert _keys(t) == ["1", "2"]
    t.write(_day_rows([1, 3], 6))
    assert _keys(t) == ["1", "2", "3"], "an update of a bare key made a second record"
    assert t.read().num_rows == 3


@pytest.mark.parametrize(("encoding", "want"), [("VALUE_ONLY", ["1", "2"]), ("FIELD_PREFIXED", ["id:1", "id:2"])])
def test_a_recorded_single_field_complex_key_encoding_wins(tmp_path: Path, encoding: str, want: list[str]) -> None:
    path = tmp_path / "t"
    evt.HudiTable.create(path, "t", "id", partition_by=["region", "day"], ordering_field="ts", table_version=9)
    _set_properties(path, **{"hoodie.table.complex.keygen.encoding": encoding})
    t = evt.HudiTable.open(path)
    t.write(_day_rows([1, 2], 5))
    t.write(_day_rows([1], 6))
    assert _keys(t) == want


@pytest.mark.skipif(
    not os.environ.get("EVT_STOCK_SHAPES_SPARK"), reason="about a minute of Spark: set EVT_STOCK_SHAPES_SPARK=1"
)
def test_single_field_complex_keys_from_a_spark_dataframe(tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    """The Spark DataFrame write keys its rows on Spark with the same encoding."""
    path = tmp_path / "t"
    t = evt.HudiTable.create(path, "t", "id", partition_by=["region", "day"], ordering_field="ts", table_version=9)
    t.write(spark.createDataFrame(_day_rows([1, 2], 5).to_pandas()), spark=spark)
    assert _keys(t) == ["id:1", "id:2"]
    t.write(_day_rows([1], 6))
    assert _keys(t) == ["id:1", "id:2"], "an update made a second record"
