"""Table versions 8 and 9 on disk: instant names, Avro commit metadata, ``hoodie.properties``, 1.x bucket hashing,
the write-index decision and SIMPLE-index routing — each checked against real 1.x files or Hudi's own cases."""

from __future__ import annotations

import io
import random
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from evt_toolkit.errors import EvtError, InvalidNameError, UnsupportedTableError
from evt_toolkit.format.metadata import decode_commit_metadata, encode_commit_metadata_avro, load_schema
from evt_toolkit.format.properties import parse_properties
from evt_toolkit.format.table_version import table_version_format
from evt_toolkit.write.bucket import bucket_ids, hash_keys, hash_keys_1x, java_list_hash
from evt_toolkit.write.create import table_properties
from evt_toolkit.write.index import resolve_write_index
from evt_toolkit.write.simple_index import plan_simple_index_writes
from tests.conftest import TABLES_DIR, fixture_names, fixture_table_path, shared_available

# -- instant names, log names, markers ---------------------------------------------------------------------------------


def test_layout_2_names() -> None:
    f = table_version_format(8)
    assert f.instant_path("20250101000000000", "deltacommit", "REQUESTED") == (
        ".hoodie/timeline/20250101000000000.deltacommit.requested"
    )
    assert f.instant_path("20250101000000000", "deltacommit", "COMPLETED", "20250101000000555") == (
        ".hoodie/timeline/20250101000000000_20250101000000555.deltacommit"
    )
    with pytest.raises(InvalidNameError, match="completion time"):
        f.instant_path("20250101000000000", "deltacommit", "COMPLETED")
    # Logs are named after the deltacommit, marked by their own name with CREATE, and their stats say so.
    assert f.log_name_instant(slice_base_instant="1", write_instant="2") == "2"
    assert (
        f.log_marker_path("2", "p=a", ".f-0_2.log.1_0-0-0", file_id="f-0", write_token="0-0-0", slice_base_instant="1")
        == ".hoodie/.temp/2/p=a/.f-0_2.log.1_0-0-0.marker.CREATE"
    )
    assert f.delta_stat_fields(write_instant="2", log_file_name="x") == {
        "prevCommit": "2",
        "baseFile": "",
        "logFiles": ["x"],
    }
    v6 = table_version_format(6)
    assert v6.instant_path("1", "deltacommit", "COMPLETED") == ".hoodie/1.deltacommit"
    assert v6.log_name_instant(slice_base_instant="1", write_instant="2") == "1"
    assert v6.log_marker_path("2", "", "x", file_id="f-0", write_token="0-0-0", slice_base_instant="1") == (
        ".hoodie/.temp/2/f-0_0-0-0_1.parquet.marker.APPEND"
    )
    assert v6.delta_stat_fields(write_instant="2", log_file_name="x") == {}
    with pytest.raises(UnsupportedTableError, match="7"):
        table_version_format(7)


# -- Avro commit metadata: byte-level agreement with every real 1.x commit file ----------------------------------------


def _layout2_commit_files() -> list[Path]:
    if not shared_available():
        return []
    return sorted(
        p
        for p in TABLES_DIR.glob("*/*/.hoodie/timeline/*")
        if p.is_file()
        and p.name.split(".", 1)[-1] in ("commit", "deltacommit", "deltacommit.inflight")
        and p.read_bytes().startswith(b"Obj")
    )


@pytest.mark.skipif(not shared_available(), reason="real Hudi fixtures not found")
def test_avro_commit_metadata_matches_every_real_file() -> None:
    files = _layout2_commit_files()
    assert len(files) > 100
    schema = load_schema("HoodieCommitMetadata")
    for path in files:
        data = path.read_bytes()
        reader = fastavro.reader(io.BytesIO(data))
        assert reader.metadata["avro.schema"] == schema, path
        original = next(iter(reader))
        decoded = decode_commit_metadata(data, str(path))
        encoded = encode_commit_metadata_avro(decoded, sync_marker=data[-16:])
        again = fastavro.reader(io.BytesIO(encoded))
        assert again.metadata == {"avro.schema": schema}
        # Same record, field for field (version, null counters and all), from the JSON shape we work with.
        assert next(iter(again)) == original, path
        # Java's DataFileWriter output, byte for byte: header, one block, sync marker.
        assert encoded == data, path


# -- hoodie.properties of new v8/v9 tables against the real ones -------------------------------------------------------

_PER_TABLE = {
    "hoodie.table.create.schema",
    "hoodie.table.metadata.partitions",
    "hoodie.table.metadata.partitions.inflight",
    "hoodie.table.index.defs.path",
    "hoodie.table.partition.fields",
    "hoodie.table.precombine.field",
    "hoodie.table.ordering.fields",
    "hoodie.compaction.payload.class",
}
_OURS_ONLY = {
    "hoodie.table.timeline.timezone",
    "hoodie.index.type",
    "hoodie.bucket.index.num.buckets",
    "hoodie.bucket.index.hash.field",
    "hoodie.payload.event.time.field",
    "hoodie.evt.min.event.time.header",
    "hoodie.evt.event.time.unit",
}


@pytest.mark.skipif(not shared_available(), reason="real Hudi fixtures not found")
@pytest.mark.parametrize(
    ("version", "fixture", "mode"),
    [
        (8, "mor_v8_trips_8i3u1d", "event_time"),
        (9, "mor_v9_mor_8i4u_commit_time", "commit_time"),
        (9, "mor_v9_txns_simple_nometa", "event_time"),
    ],
)
def test_new_table_properties_match_hudi(version: int, fixture: str, mode: str) -> None:
    real = parse_properties((fixture_table_path(fixture) / ".hoodie" / "hoodie.properties").read_text())
    ours = table_properties("t", "id", partition_by="city", ordering_field="ts", merge_mode=mode, table_version=version)
    assert set(ours) - _OURS_ONLY - _PER_TABLE == set(real) - _PER_TABLE
    for key in (
        "hoodie.table.version",
        "hoodie.table.initial.version",
        "hoodie.timeline.layout.version",
        "hoodie.timeline.path",
        "hoodie.timeline.history.path",
        "hoodie.record.merge.mode",
        "hoodie.table.keygenerator.type",
        "hoodie.table.type",
    ):
        assert ours[key] == real[key], key
    assert ("hoodie.table.ordering.fields" in ours) == (version >= 9)
    assert ("hoodie.table.precombine.field" in ours) == (version == 8)


def test_table_version_is_validated() -> None:
    from evt_toolkit.errors import TableConfigError

    with pytest.raises(TableConfigError, match="table_version must be 6, 8 or 9"):
        table_properties("t", "id", table_version=7)


# -- 1.x hash keys of the bucket index (HUDI-8403) ---------------------------------------------------------------------


def test_hash_keys_1x_cases_of_hudi() -> None:
    # TestBucketIdentifier.testGetHashKeys after apache/hudi#12120, and the timestamp case of KeyGenUtils' comment.
    assert hash_keys_1x("f1:abc,f2:bcd,efg", "f1,f2") == ["abc", "bcd,efg"]
    assert hash_keys_1x("col1:val1,col2:2014-10-22 13:50:42,col3:val3", ["col2"]) == ["2014-10-22 13:50:42"]
    assert hash_keys_1x("2014-10-22 13:50:42", ["ts"]) == ["2014-10-22 13:50:42"]
    assert hash_keys_1x("a,b", ["x"]) == ["a,b"]
    assert hash_keys_1x("f1:__null__,f2:__empty__", []) == [None, ""]
    # 0.x reads the timestamp key as a field name "2014-10-22 13" and drops it: 1.x keeps it whole.
    assert hash_keys("2014-10-22 13:50:42", ["ts"]) == []


def test_bucket_ids_1x_equal_scalar_port() -> None:
    rng = random.Random(7)
    alphabet = "ab:,_é1"
    keys = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(800)]
    keys += ["id:1,name:x", "f1:abc,f2:bcd,efg", "k:2024-01-01 10:11:12,z:1"]
    good = []
    for k in keys:
        try:
            hash_keys_1x(k, "id,name")
            good.append(k)
        except EvtError:
            continue  # a part without ':' after a pair: Java's parse throws on it, so do we
    expected = [(java_list_hash(hash_keys_1x(k, "id,name")) & 0x7FFFFFFF) % 13 for k in good]
    assert bucket_ids(good, "id,name", 13, key_extraction="1.x").tolist() == expected
    # Keys with neither ',' nor ':' land in the same bucket under either parse.
    plain = [k for k in good if "," not in k and ":" not in k]
    assert len(plain) > 100
    assert bucket_ids(plain, "id", 13, key_extraction="1.x").tolist() == bucket_ids(plain, "id", 13).tolist()


# -- which index, and refusals -----------------------------------------------------------------------------------------


def _resolve(props: dict[str, str], options: dict[str, str] | None = None, version: int = 9):  # type: ignore[no-untyped-def]
    return resolve_write_index(props, options or {}, version=version, where="/t", record_key_fields=("id",))


def test_resolve_write_index() -> None:
    assert _resolve({"hoodie.bucket.index.num.buckets": "4"}).kind == "BUCKET"
    assert _resolve({}, {"hoodie.index.type": "simple"}).kind == "SIMPLE"
    bucket = _resolve({}, {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "3"})
    assert (bucket.num_buckets, bucket.hash_fields) == (3, "id")
    with pytest.raises(UnsupportedTableError, match="does not say which index"):
        _resolve({})
    with pytest.raises(UnsupportedTableError, match="bloom filters"):
        _resolve({}, {"hoodie.index.type": "BLOOM"})
    with pytest.raises(UnsupportedTableError, match="across partitions"):
        _resolve({}, {"hoodie.index.type": "GLOBAL_SIMPLE"})
    with pytest.raises(UnsupportedTableError, match="metadata table"):
        _resolve({}, {"hoodie.index.type": "RECORD_INDEX"})
    with pytest.raises(UnsupportedTableError, match="CONSISTENT_HASHING"):
        _resolve(
            {
                "hoodie.index.type": "BUCKET",
                "hoodie.bucket.index.num.buckets": "2",
                "hoodie.index.bucket.engine": "CONSISTENT_HASHING",
            }
        )
    with pytest.raises(UnsupportedTableError, match=r"needs hoodie\.bucket\.index\.num\.buckets"):
        _resolve({}, {"hoodie.index.type": "BUCKET"})
    with pytest.raises(UnsupportedTableError, match="versions 8 and 9"):
        _resolve({}, {"hoodie.index.type": "SIMPLE"}, version=6)


# -- SIMPLE-index routing ----------------------------------------------------------------------------------------------


def _rows(part: list[str], keys: list[str]) -> pa.Table:
    return pa.table(
        {
            "_hoodie_partition_path": pa.array(part, pa.string()),
            "_hoodie_record_key": pa.array(keys, pa.string()),
            "_evt_bucket": pa.array([0] * len(keys), pa.int32()),
        }
    )


def test_simple_index_routing() -> None:
    loc = pa.table(
        {
            "_hoodie_partition_path": ["a", "a", "b"],
            "_hoodie_record_key": ["k1", "k2", "k1"],
            "file_id": ["fa-0", "fa2-0", "fb-0"],
        }
    )
    slices = {("a", "fa-0"): ("1", "fa"), ("a", "fa2-0"): ("1", "fa2"), ("b", "fb-0"): ("2", "fb")}
    ids = iter(f"new{i}-0" for i in range(10))
    up = _rows(["a", "b", "a", "a", "b"], ["k1", "k1", "n1", "n2", "n3"])
    de = _rows(["a", "b"], ["k2", "zz"])
    fgs, up2, de2 = plan_simple_index_writes(
        "9", up, de, loc, slices, new_file_id=lambda: next(ids), insert_split_size=1
    )
    by_ordinal = {fg.bucket: fg for fg in fgs}
    routed = [
        (p, k, by_ordinal[g].file_id) for p, k, g in zip(*(up2[c].to_pylist() for c in up2.column_names), strict=True)
    ]
    assert routed[:2] == [("a", "k1", "fa-0"), ("b", "k1", "fb-0")]
    # Unknown keys are inserts into new file groups, one per insert_split_size rows, each a base file.
    inserts = {by_ordinal[g].file_id for g in up2["_evt_bucket"].to_pylist()[2:]}
    assert len(inserts) == 3 and all(by_ordinal[g].creates_base_file for g in up2["_evt_bucket"].to_pylist()[2:])
    assert all(
        by_ordinal[g].prev_commit == "null" and by_ordinal[g].base_instant == "9"
        for g in up2["_evt_bucket"].to_pylist()[2:]
    )
    # Deletes of known keys go to their group; unknown ones are dropped.
    assert de2["_hoodie_record_key"].to_pylist() == ["k2"]
    assert by_ordinal[de2["_evt_bucket"][0].as_py()].file_id == "fa2-0"
    assert not by_ordinal[de2["_evt_bucket"][0].as_py()].creates_base_file


def test_simple_index_refuses_a_key_in_two_groups() -> None:
    from evt_toolkit.errors import WriteError

    loc = pa.table({"_hoodie_partition_path": ["a", "a"], "_hoodie_record_key": ["k", "k"], "file_id": ["f1", "f2"]})
    with pytest.raises(WriteError, match="several file groups"):
        plan_simple_index_writes("9", _rows(["a"], ["k"]), _rows([], []), loc, {})


def test_fixture_names_available() -> None:
    if not shared_available():
        pytest.skip("real Hudi fixtures not found")
    assert "mor_v9_txns_simple_nometa" in fixture_names()
