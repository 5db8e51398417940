"""The files-partition records and table-config edits of format/mdt.py, checked against what Hudi wrote."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evt_toolkit.errors import MetadataTableError
from evt_toolkit.format.hfile import read_hfile
from evt_toolkit.format.logfile import BlockType, read_log_blocks_bytes
from evt_toolkit.format.mdt import (
    METADATA_INFLIGHT_KEY,
    METADATA_PARTITIONS_KEY,
    FileInfo,
    FilesRecord,
    decode_files_record,
    encode_files_record,
    encode_index_definitions,
    merge_records,
    metadata_partitions_after_drop,
    partition_files_record,
    partition_list_record,
    schema_without_meta_fields,
    without_index_definitions,
)
from evt_toolkit.format.metadata import read_avro_container
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR


@SKIP_NO_SHARED
def test_records_re_encode_byte_for_byte_and_commit_schema_matches() -> None:
    """Every files record Hudi wrote (1.0 and 1.1) decodes and re-encodes to the same bytes (``key`` emptied, the
    other indexes' fields null), and the commit's ``extraMetadata.schema`` is the block schema minus meta fields."""
    checked = 0
    for mdt in sorted(glob.glob(str(TABLES_DIR / "*/*/.hoodie/metadata"))):
        for commit in sorted(glob.glob(f"{mdt}/.hoodie/timeline/*_*.deltacommit")):
            meta = read_avro_container(Path(commit).read_bytes(), commit)
            stats = (meta.get("partitionToWriteStats") or {}).get("files") or []
            for stat in stats:
                if not stat["path"].startswith("files/."):
                    continue
                log = f"{mdt}/{stat['path']}"
                data = Path(log).read_bytes()
                for b in read_log_blocks_bytes(data, log):
                    if b.block_type is not BlockType.HFILE_DATA:
                        continue
                    assert b.schema_json is not None
                    assert schema_without_meta_fields(b.schema_json) == meta["extraMetadata"]["schema"]
                    h = read_hfile(data[b.content_offset : b.content_offset + b.content_length], log)
                    for key, value in h.entries:
                        rec = decode_files_record(key, value, b.schema_json, log)
                        assert encode_files_record(rec, b.schema_json) == value
                        checked += 1
    assert checked > 100


def _rec(**files: tuple[int, bool]) -> FilesRecord:
    return FilesRecord("p", 2, {k: FileInfo(*v) for k, v in files.items()})


def test_merge_rule_of_hoodie_metadata_payload() -> None:
    old = _rec(a=(10, False), b=(5, False), c=(0, True))
    new = _rec(a=(7, False), b=(0, True), c=(0, True), d=(0, True), e=(3, False))
    merged = merge_records(old, new).files
    assert merged["a"] == FileInfo(10, False)  # sizes only grow
    assert "b" not in merged  # a tombstone cancels a live entry and goes with it
    assert merged["c"] == FileInfo(0, True)  # tombstone over tombstone stays
    assert merged["d"] == FileInfo(0, True)  # tombstone without an older entry stays (to cancel the base file's)
    assert merged["e"] == FileInfo(3, False)
    with pytest.raises(MetadataTableError, match="cannot merge"):
        merge_records(partition_list_record(["x"]), _rec(a=(1, False)))


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["add", "del"]), st.sampled_from("abcdef"), st.integers(1, 100)), max_size=30
    ),
    split=st.integers(0, 30),
)
def test_base_then_logs_equals_replaying_every_change(ops: list[tuple[str, str, int]], split: int) -> None:
    """Files added and deleted over many instants, some compacted into a base record: the merge lists exactly the
    files a model of the file system holds (each file is added once and deleted at most once, as on storage)."""
    state: dict[str, int] = {}
    seen: set[str] = set()
    records: list[FilesRecord] = []
    for op, name, size in ops:
        if op == "add" and name not in seen:
            seen.add(name)
            state[name] = size
            records.append(partition_files_record("p", {name: size}, []))
        elif op == "del" and name in state:
            del state[name]
            records.append(partition_files_record("p", {}, [name]))
    if not records:
        return
    cut = min(split, len(records))
    base = records[0]
    for r in records[1:cut]:
        base = merge_records(base, r)
    merged = base
    for r in records[max(cut, 1) :]:
        merged = merge_records(merged, r)
    assert merged.active() == state


def test_files_record_refuses_what_hudi_refuses() -> None:
    with pytest.raises(MetadataTableError, match="size 0"):
        partition_files_record("p", {"f": 0}, [])
    with pytest.raises(MetadataTableError, match="both added and deleted"):
        partition_files_record("p", {"f": 1}, ["f"])
    assert partition_files_record("", {"f": 1}, []).key == "."
    assert set(partition_list_record(["", "a"], ["b"]).files) == {".", "a", "b"}


def test_dropping_metadata_partitions_edits_the_config_as_hudi() -> None:
    props = {METADATA_PARTITIONS_KEY: "record_index,files,column_stats", METADATA_INFLIGHT_KEY: "secondary_index_x"}
    out = metadata_partitions_after_drop(props, ["record_index", "secondary_index_x"])
    assert out[METADATA_PARTITIONS_KEY] == "column_stats,files"
    assert out[METADATA_INFLIGHT_KEY] == ""
    assert metadata_partitions_after_drop(props, ["files"])[METADATA_PARTITIONS_KEY] == ""
    with pytest.raises(MetadataTableError, match="comma"):
        metadata_partitions_after_drop(props, ["a,b"])


@SKIP_NO_SHARED
def test_index_definitions_are_written_as_jackson_does() -> None:
    paths = sorted(glob.glob(str(TABLES_DIR / "*/*/.hoodie/.index_defs/index.json")))
    assert paths
    for path in paths:
        text = Path(path).read_text(encoding="utf-8")
        assert encode_index_definitions(json.loads(text)) == text, path
        kept, removed = without_index_definitions(text, ["column_stats", "nope"], path)
        assert removed == ("column_stats",)
        assert "column_stats" not in json.loads(kept)["indexDefinitions"]
    with pytest.raises(MetadataTableError, match="not JSON"):
        without_index_definitions("{", ["x"], "i.json")
