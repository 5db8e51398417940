"""Timeline metadata codecs against every real timeline file, plus error handling and the writers."""

from __future__ import annotations

import glob
import io
import json
from pathlib import Path

import fastavro
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evt_toolkit.errors import MetadataDecodeError
from evt_toolkit.format.metadata import (
    AVRO_MAGIC,
    decode_clean_metadata,
    decode_clean_plan,
    decode_commit_metadata,
    decode_compaction_plan,
    decode_replace_requested,
    decode_rollback_metadata,
    decode_rollback_plan,
    encode_avro_container,
    encode_commit_metadata_json,
    load_schema,
    read_avro_container,
)
from evt_toolkit.format.names import InstantFileName
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR, fixture_table_path


def _timeline_files() -> list[Path]:
    """Every instant file of every fixture timeline (data and metadata tables, both layouts)."""
    if not TABLES_DIR.is_dir():
        return []
    patterns = ["*/*/.hoodie/*", "*/*/.hoodie/timeline/*", "*/*/.hoodie/metadata/.hoodie/timeline/*"]
    files = {Path(p) for pat in patterns for p in glob.glob(str(TABLES_DIR / pat))}
    return sorted(p for p in files if p.is_file() and InstantFileName.parse(p.name) is not None)


_COMMIT_ACTIONS = {"commit", "deltacommit", "replacecommit"}


def _decode_any(path: Path) -> dict[str, object] | None:
    name = InstantFileName.parse(path.name)
    assert name is not None
    data = path.read_bytes()
    action, state = name.action, name.state
    if action in _COMMIT_ACTIONS and (state != "REQUESTED" or action != "replacecommit"):
        return decode_commit_metadata(data, str(path))
    if action == "replacecommit" or action == "clustering":
        if state == "REQUESTED":
            return decode_replace_requested(data, str(path))
        return decode_commit_metadata(data, str(path))  # layout-2 clustering.inflight: empty or workload
    if action in ("compaction", "logcompaction"):
        return decode_compaction_plan(data, str(path)) if state == "REQUESTED" else None
    if action == "clean":
        return decode_clean_metadata(data, str(path)) if state == "COMPLETED" else decode_clean_plan(data, str(path))
    if action == "rollback":
        if state == "COMPLETED":
            return decode_rollback_metadata(data, str(path))
        return decode_rollback_plan(data, str(path)) if state == "REQUESTED" else None
    return None  # indexing, savepoint, ...: not needed by this toolkit


_FILES = _timeline_files()


@SKIP_NO_SHARED
def test_fixture_timelines_are_found() -> None:
    assert len(_FILES) > 500
    actions = {InstantFileName.parse(p.name).action for p in _FILES}  # type: ignore[union-attr]
    assert {"deltacommit", "commit", "compaction", "replacecommit", "clustering", "rollback"} <= actions


@SKIP_NO_SHARED
@pytest.mark.parametrize("path", _FILES, ids=lambda p: str(p.relative_to(TABLES_DIR)))
def test_every_fixture_timeline_file_decodes(path: Path) -> None:
    decoded = _decode_any(path)
    name = InstantFileName.parse(path.name)
    assert name is not None
    if decoded is not None and name.action in _COMMIT_ACTIONS and "partitionToWriteStats" in decoded:
        assert set(decoded) >= {"partitionToWriteStats", "compacted", "extraMetadata", "operationType"}
        for stats in decoded["partitionToWriteStats"].values():  # type: ignore[attr-defined]
            assert all("fileId" in s for s in stats)


@SKIP_NO_SHARED
def test_v6_json_commit_metadata_reencodes_byte_for_byte() -> None:
    """Our Jackson-style printer reproduces Hudi's JSON exactly (key order as read)."""
    checked = 0
    for path in _FILES:
        data = path.read_bytes()
        if path.parent.name == ".hoodie" and data[:1] == b"{":
            assert encode_commit_metadata_json(json.loads(data)) == data, path
            checked += 1
    assert checked >= 10


# -- specific values ------------------------------------------------------------------------------------------------


@SKIP_NO_SHARED
def test_v6_deltacommit_values() -> None:
    path = fixture_table_path("mor_v6_trips_8i1u") / ".hoodie" / "20250331030645735.deltacommit"
    meta = decode_commit_metadata(path.read_bytes(), str(path))
    assert list(meta["partitionToWriteStats"]) == ["city=san_francisco"]
    (stat,) = meta["partitionToWriteStats"]["city=san_francisco"]
    assert stat["fileId"] == "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
    assert stat["prevCommit"] == "20250331030642808"
    assert stat["logFiles"] == [".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85"]
    assert stat["baseFile"] == "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_0-13-60_20250331030642808.parquet"
    assert stat["minEventTime"] is None and stat["maxEventTime"] is None
    assert (stat["numUpdateWrites"], stat["totalWriteBytes"], stat["logVersion"]) == (1, 1148, 1)
    assert meta["compacted"] is False
    assert meta["operationType"] == "UPSERT_PREPPED"
    assert json.loads(meta["extraMetadata"]["schema"])["name"] == "v6_trips_8i1u_record"


@SKIP_NO_SHARED
def test_v6_inflight_workload_and_empty_requested() -> None:
    hoodie = fixture_table_path("mor_table_uncommitted_log_v6") / ".hoodie"
    inflight = decode_commit_metadata((hoodie / "20260815174509450.deltacommit.inflight").read_bytes(), "x")
    assert inflight["partitionToWriteStats"]
    empty = decode_commit_metadata((hoodie / "20260815174509450.deltacommit.requested").read_bytes(), "y")
    assert empty == {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {}, "operationType": "UNKNOWN"}


@SKIP_NO_SHARED
def test_v8_avro_commit_metadata_values() -> None:
    tl = fixture_table_path("mor_v8_trips_8i3u1d") / ".hoodie" / "timeline"
    path = tl / "20251220210130911_20251220210131755.deltacommit"
    assert path.read_bytes().startswith(AVRO_MAGIC)
    meta = decode_commit_metadata(path.read_bytes(), str(path))
    assert "version" not in meta
    (stat,) = meta["partitionToWriteStats"]["city=sao_paulo"]
    assert stat["fileId"] == "8aa68f7e-afd6-4c94-b86c-8a886552e08d-0"
    # v8: the log file carries the deltacommit's own instant, and prevCommit is that instant too.
    assert stat["logFiles"] == [".8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210130911.log.1_0-1139-3316"]
    assert stat["prevCommit"] == "20251220210130911"
    assert stat["baseFile"] == ""
    assert stat["minEventTime"] is None
    assert meta["operationType"] == "UPSERT_PREPPED" and meta["compacted"] is False

    compaction = tl / "20251220210129235_20251220210129883.commit"
    meta = decode_commit_metadata(compaction.read_bytes(), str(compaction))
    assert meta["compacted"] is True
    assert meta["operationType"] == "COMPACT"
    assert sorted(meta["partitionToWriteStats"]) == ["city=chennai", "city=san_francisco", "city=sao_paulo"]
    sf = meta["partitionToWriteStats"]["city=san_francisco"][0]
    assert sf["totalLogFilesCompacted"] == 1 and sf["totalLogSizeCompacted"] == 1153
    assert sf["path"].endswith("_20251220210129235.parquet")


@SKIP_NO_SHARED
def test_v8_compaction_plan_values() -> None:
    path = fixture_table_path("mor_v8_trips_8i3u1d") / ".hoodie/timeline/20251220210129235.compaction.requested"
    plan = decode_compaction_plan(path.read_bytes(), str(path))
    assert plan["version"] == 2
    ops = {op["fileId"]: op for op in plan["operations"]}
    op = ops["6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0"]
    assert op["baseInstantTime"] == "20251220210108078"
    assert op["deltaFilePaths"] == [
        ".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210127080.log.1_0-1072-3078",
        ".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210128625.log.1_0-1097-3150",
    ]
    assert op["dataFilePath"] == "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_2-986-2794_20251220210108078.parquet"
    assert op["metrics"]["TOTAL_LOG_FILES"] == 2.0
    assert plan["missingSchedulePartitions"] == []


@SKIP_NO_SHARED
def test_v9_compaction_plan_values() -> None:
    path = fixture_table_path("mor_v9_txns_simple_nometa") / ".hoodie/timeline/20260307135839895.compaction.requested"
    plan = decode_compaction_plan(path.read_bytes(), str(path))
    assert plan["version"] == 2
    ops = {op["fileId"]: op for op in plan["operations"]}
    op = ops["db2fca8f-03b7-4da7-b042-4b617ab79b9d-0"]
    assert op["baseInstantTime"] == "20260307135827749"
    assert op["partitionPath"] == "region=us"
    assert op["deltaFilePaths"][:2] == [
        ".db2fca8f-03b7-4da7-b042-4b617ab79b9d-0_20260307135830801.log.1_0-10-23",
        ".db2fca8f-03b7-4da7-b042-4b617ab79b9d-0_20260307135832616.log.1_0-17-38",
    ]
    assert all("/" not in p for o in plan["operations"] for p in o["deltaFilePaths"])


@SKIP_NO_SHARED
def test_v9_rollback_plan_and_metadata_values() -> None:
    tl = fixture_table_path("mor_v9_nonpartitioned_rollback") / ".hoodie" / "timeline"
    plan = decode_rollback_plan((tl / "20260403184259077.rollback.requested").read_bytes(), "p")
    assert plan["instantToRollback"] == {"commitTime": "20260403184242950", "action": "deltacommit"}
    (request,) = plan["RollbackRequests"]
    assert request["filesToBeDeleted"][0].endswith("_20260403184242950.parquet")
    meta = decode_rollback_metadata((tl / "20260403184259077_20260403184300219.rollback").read_bytes(), "m")
    assert meta["commitsRollback"] == ["20260403184242950"]
    assert meta["totalFilesDeleted"] == 1
    assert meta["instantsRollback"] == [{"commitTime": "20260403184242950", "action": "deltacommit"}]


@SKIP_NO_SHARED
def test_v9_replacecommit_and_clustering_plan() -> None:
    tl = fixture_table_path("mor_v9_txns_simple_nometa") / ".hoodie" / "timeline"
    meta = decode_commit_metadata((tl / "20260307135837782_20260307135838045.replacecommit").read_bytes(), "r")
    assert meta["operationType"] == "INSERT_OVERWRITE"
    assert meta["partitionToReplaceFileIds"]["region=eu"] == [
        "c06fe141-9f11-46fb-aa70-d7f9d2dcca2f-0",
        "be8660fe-da4e-43c3-80cf-4fccb89ab0cc-0",
    ]
    req = decode_replace_requested((tl / "20260307135840454.clustering.requested").read_bytes(), "c")
    assert req["operationType"] == "CLUSTER"
    assert len(req["clusteringPlan"]["inputGroups"]) == 3
    assert decode_replace_requested(b"", "empty") == {}


# -- errors ---------------------------------------------------------------------------------------------------------


def test_corrupt_json_names_the_file() -> None:
    with pytest.raises(MetadataDecodeError, match=r"\.hoodie/1\.deltacommit"):
        decode_commit_metadata(b'{"partitionToWriteStats" : {', ".hoodie/1.deltacommit")
    with pytest.raises(MetadataDecodeError, match=r"x\.commit"):
        decode_commit_metadata(b"[1, 2]", "x.commit")
    with pytest.raises(MetadataDecodeError, match=r"x\.commit"):
        decode_commit_metadata(b'{"partitionToWriteStats": {"p": [1]}}', "x.commit")
    with pytest.raises(MetadataDecodeError, match=r"x\.commit"):
        decode_commit_metadata(b"\xff\xfe{", "x.commit")


@SKIP_NO_SHARED
def test_truncated_and_corrupt_avro_names_the_file() -> None:
    path = fixture_table_path("mor_v8_trips_8i3u1d") / ".hoodie/timeline/20251220210129235.compaction.requested"
    data = path.read_bytes()
    for bad in (data[: len(data) // 2], data[:-20], data[:10], AVRO_MAGIC + b"\x00" * 40):
        with pytest.raises(MetadataDecodeError, match=r"compaction\.requested"):
            decode_compaction_plan(bad, str(path))
        with pytest.raises(MetadataDecodeError, match=r"compaction\.requested"):
            decode_commit_metadata(bad, str(path))
    with pytest.raises(MetadataDecodeError, match="bad magic"):
        read_avro_container(b"Obj\x02" + data[4:], "f.clean")
    with pytest.raises(MetadataDecodeError, match="empty"):
        decode_rollback_plan(b"", "r.rollback.requested")


@SKIP_NO_SHARED
def test_wrong_record_type_is_rejected() -> None:
    path = fixture_table_path("mor_v8_trips_8i3u1d") / ".hoodie/timeline/20251220210129235.compaction.requested"
    with pytest.raises(MetadataDecodeError, match="HoodieRollbackMetadata"):
        decode_rollback_metadata(path.read_bytes(), str(path))


# -- writers ----------------------------------------------------------------------------------------------------------


def test_compaction_plan_v1_is_migrated_to_bare_file_names() -> None:
    schema = load_schema("HoodieCompactionPlan.v6")
    plan = {
        "operations": [
            {
                "baseInstantTime": "001",
                "deltaFilePaths": ["file:/t/p/.f1_001.log.1_0-1-1", "/t/p/.f1_001.log.2_0-1-1"],
                "dataFilePath": "hdfs://nn/t/p/f1_0-1-1_001.parquet",
                "fileId": "f1",
                "partitionPath": "p",
                "metrics": {"TOTAL_LOG_FILES": 2.0},
                "bootstrapFilePath": None,
            }
        ],
        "extraMetadata": None,
        "version": 1,
        "strategy": None,
        "preserveHoodieMetadata": False,
    }
    out = decode_compaction_plan(encode_avro_container(plan, schema), "p.compaction.requested")
    assert out["version"] == 2
    (op,) = out["operations"]
    assert op["deltaFilePaths"] == [".f1_001.log.1_0-1-1", ".f1_001.log.2_0-1-1"]
    assert op["dataFilePath"] == "f1_0-1-1_001.parquet"
    assert op["metrics"] == {"TOTAL_LOG_FILES": 2.0}


@SKIP_NO_SHARED
def test_encode_avro_container_round_trips_real_plan_byte_for_byte() -> None:
    path = fixture_table_path("mor_v8_trips_8i3u1d") / ".hoodie/timeline/20251220210129235.compaction.requested"
    data = path.read_bytes()
    reader = fastavro.reader(io.BytesIO(data))
    schema_json = reader.metadata["avro.schema"]
    assert schema_json == load_schema("HoodieCompactionPlan")
    record = next(iter(reader))
    assert isinstance(record, dict)
    sync = data[-16:]
    assert encode_avro_container(record, schema_json, sync_marker=sync) == data
    assert read_avro_container(encode_avro_container(record, schema_json), "x") == record


@SKIP_NO_SHARED
@pytest.mark.parametrize(
    "schema_name",
    [
        "HoodieCommitMetadata",
        "HoodieReplaceCommitMetadata",
        "HoodieRequestedReplaceMetadata",
        "HoodieCompactionPlan",
        "HoodieRollbackPlan",
        "HoodieRollbackMetadata",
    ],
)
def test_shipped_schemas_are_the_real_embedded_strings(schema_name: str) -> None:
    schema = load_schema(schema_name)
    found = False
    for path in _FILES:
        data = path.read_bytes()
        if data.startswith(AVRO_MAGIC):
            reader = fastavro.reader(io.BytesIO(data))
            writer_schema = reader.writer_schema
            assert isinstance(writer_schema, dict)
            if writer_schema["name"].endswith("." + schema_name):
                assert reader.metadata["avro.schema"] == schema
                record = next(iter(reader))
                assert isinstance(record, dict)
                assert encode_avro_container(record, schema, sync_marker=data[-16:]) == data
                found = True
    assert found


def test_encode_avro_container_header_has_only_the_schema() -> None:
    schema = load_schema("HoodieRollbackPlan")
    data = encode_avro_container({"instantToRollback": None, "RollbackRequests": None, "version": 1}, schema)
    assert data.startswith(AVRO_MAGIC)
    reader = fastavro.reader(io.BytesIO(data))
    assert set(reader.metadata) == {"avro.schema"}
    assert reader.metadata["avro.schema"] == schema
    with pytest.raises(ValueError):
        encode_avro_container({}, schema, sync_marker=b"short")


_stats = st.fixed_dictionaries(
    {
        "fileId": st.text(max_size=10),
        "path": st.one_of(st.none(), st.text(max_size=20)),
        "numWrites": st.integers(-(2**63), 2**63 - 1),
        "minEventTime": st.one_of(st.none(), st.integers(0, 2**62)),
        "logFiles": st.lists(st.text(max_size=10), max_size=3),
        "runtimeStats": st.one_of(st.none(), st.fixed_dictionaries({"totalScanTime": st.integers(0, 100)})),
    }
)


@given(
    st.dictionaries(st.text(max_size=8), st.lists(_stats, max_size=3), max_size=3),
    st.booleans(),
    st.dictionaries(st.text(max_size=8), st.text(max_size=30), max_size=3),
)
def test_commit_metadata_json_round_trip(
    stats: dict[str, list[dict[str, object]]], compacted: bool, extra: dict[str, str]
) -> None:
    meta = {"partitionToWriteStats": stats, "compacted": compacted, "extraMetadata": extra, "operationType": "UPSERT"}
    data = encode_commit_metadata_json(meta)
    assert json.loads(data) == meta
    assert decode_commit_metadata(data, "x.deltacommit") == meta


def test_commit_metadata_json_layout() -> None:
    meta = {"a": {"p": [{"x": 1, "y": [1, 2]}, {"z": None}]}, "b": [], "c": 0.5, "d": 'q"\n'}
    assert encode_commit_metadata_json(meta).decode() == (
        "{\n"
        '  "a" : {\n'
        '    "p" : [ {\n'
        '      "x" : 1,\n'
        '      "y" : [ 1, 2 ]\n'
        "    }, {\n"
        '      "z" : null\n'
        "    } ]\n"
        "  },\n"
        '  "b" : [ ],\n'
        '  "c" : 0.5,\n'
        '  "d" : "q\\"\\n"\n'
        "}"
    )
