"""Tables we write read the same in our reader, in hudi-rs and in an independent pandas oracle.

Every table here is created by ``HudiTable.create`` and written by ``HudiTable.write`` (bucket index, log-only file
groups, one new log version per deltacommit, rollover under a tiny ``hoodie.logfile.max.size``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evt_toolkit as evt
from evt_toolkit.errors import SchemaMismatchError, UnsupportedTableError, WriteError
from evt_toolkit.format.log_content import read_block_records
from evt_toolkit.format.log_writer import avro_schema_json, with_meta_fields
from evt_toolkit.format.logfile import scan_log_blocks
from evt_toolkit.format.properties import dump_properties
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec
from evt_toolkit.write.task import prepare_batch, write_file_group
from tests.normalize import assert_same_rows
from tests.oracle import Oracle
from tests.tables import write_rows as _rows

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

DATA_COLUMNS = ["id", "region", "ts", "ev", "v", "name", "_hoodie_is_deleted"]
SMALL_LOGS = {"hoodie.logfile.max.size": "1500"}
PROPERTY_EXAMPLES = int(os.environ.get("EVT_PROPERTY_EXAMPLES", "15"))


# -- helpers ----------------------------------------------------------------------------------------------------------


def _keys(ids: list[int], ts: int | list[int] | None = None) -> pd.DataFrame:
    df = pd.DataFrame({"id": pd.array(ids, dtype="int64"), "region": [f"r{i % 3}" for i in ids]})
    if ts is not None:
        df["ts"] = pd.array(ts if isinstance(ts, list) else [ts] * len(ids), dtype="int64")
    return df


def _create(path: Path, *, partitioned: bool, merge_mode: str, buckets: int = 8, **kwargs: Any) -> evt.HudiTable:
    return evt.HudiTable.create(
        path,
        "rt_table",
        "id",
        partition_by="region" if partitioned else None,
        ordering_field="ts",
        event_time_field="ev",
        buckets=buckets,
        merge_mode=merge_mode,
        **kwargs,
    )


def _oracle(partitioned: bool, merge_mode: str) -> Oracle:
    return Oracle(["id"], ["region"] if partitioned else None, "ts", merge_mode)


def _hudi_rs(path: Path, options: Any = None) -> pa.Table:
    t = hudi.HudiTableBuilder.from_base_uri(str(path.resolve())).build()
    batches = t.read(options) if options is not None else t.read()
    return pa.Table.from_batches(batches) if batches else pa.table({c: [] for c in DATA_COLUMNS})


def _expected(oracle: Oracle) -> pa.Table:
    df = oracle.result()
    if df.empty:
        return pa.table({c: pa.array([], pa.null()) for c in DATA_COLUMNS})
    return pa.Table.from_pandas(df, preserve_index=False)


def _check(table: evt.HudiTable, oracle: Oracle, what: str = "") -> None:
    expected = _expected(oracle)
    ours = table.refresh().read()
    theirs = _hudi_rs(Path(table.path))
    assert_same_rows(ours, expected, DATA_COLUMNS if ours.num_rows or expected.num_rows else [], f"ours {what}")
    assert_same_rows(theirs, expected, DATA_COLUMNS if theirs.num_rows or expected.num_rows else [], f"rs {what}")


def _apply(table: evt.HudiTable, oracle: Oracle, op: str, df: pd.DataFrame, **kw: Any) -> str:
    instant = table.write(df, op, **kw)
    oracle.apply(op, df)
    return instant


def _timeline_files(path: Path) -> list[str]:
    return sorted(p.name for p in (path / ".hoodie").iterdir() if p.is_file())


def _commit(path: Path, instant: str) -> dict[str, Any]:
    return dict(json.loads((path / ".hoodie" / f"{instant}.deltacommit").read_text()))


# -- round trips ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("merge_mode", ["commit_time", "event_time"])
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "nonpartitioned"])
def test_round_trip_history(tmp_path: Path, partitioned: bool, merge_mode: str) -> None:
    path = tmp_path / "t"
    t = _create(path, partitioned=partitioned, merge_mode=merge_mode, buckets=16)
    o = _oracle(partitioned, merge_mode)
    instants = [_apply(t, o, "upsert", _rows(list(range(0, 6)), 10, seed=1))]
    _check(t, o, "first upsert")
    # Updates (some with an older ordering value), in-batch duplicates, new keys in new buckets.
    dup = _rows([1, 1, 2, 40, 41, 42, 43, 44, 45], [20, 25, 5, 10, 10, 10, 10, 10, 10], seed=2)
    instants.append(_apply(t, o, "upsert", dup, options=SMALL_LOGS))
    _check(t, o, "updates + new buckets")
    # Deletes: with ordering values (one older than the stored row) and natural-order ones.
    instants.append(_apply(t, o, "delete", _keys([0, 1, 41], [100, 1, 100])))
    instants.append(_apply(t, o, "delete", _keys([3, 2])))
    _check(t, o, "deletes")
    # Inserts, re-inserts of deleted keys, a soft delete; a large batch that rolls over.
    instants.append(_apply(t, o, "insert", _rows([0, 3, 100, 101], 30, seed=3)))
    soft = _rows([4, 5], 50, deleted=[True, False], seed=4)
    instants.append(_apply(t, o, "upsert", soft))
    big = _rows(list(range(200, 1700)), 60, seed=5)
    instants.append(_apply(t, o, "upsert", big, options=SMALL_LOGS))
    _check(t, o, "final")

    assert instants == sorted(instants) and len(set(instants)) == len(instants)
    # Rollover: one file group got several log files in the same deltacommit.
    stats = [s for ss in _commit(path, instants[-1])["partitionToWriteStats"].values() for s in ss]
    per_group: dict[str, list[int]] = {}
    for s in stats:
        per_group.setdefault(s["fileId"], []).append(s["logVersion"])
    assert any(len(v) > 1 for v in per_group.values()), per_group
    # New buckets became log-only file groups keyed by the instant that created them.
    slices = t.file_slices()
    assert all(b is None for b in slices["base_file"].to_pylist())
    assert set(slices["base_instant"].to_pylist()) <= set(instants)
    assert len(set(slices["base_instant"].to_pylist())) > 1


def test_commit_metadata_and_files_look_like_hudi(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _create(path, partitioned=True, merge_mode="commit_time", buckets=2)
    i1 = t.write(_rows([1, 2, 3, 4, 5, 6], 1))
    i2 = t.write(_rows([1, 2, 3], 2))
    requested = path / ".hoodie" / f"{i2}.deltacommit.requested"
    assert requested.read_bytes() == b""
    profile = json.loads((path / ".hoodie" / f"{i2}.deltacommit.inflight").read_text())
    assert profile["operationType"] == "UPSERT" and profile["extraMetadata"] == {}
    meta = _commit(path, i2)
    assert list(meta) == ["partitionToWriteStats", "compacted", "extraMetadata", "operationType"]
    assert meta["compacted"] is False and meta["operationType"] == "UPSERT"
    schema = json.loads(meta["extraMetadata"]["schema"])
    assert [f["name"] for f in schema["fields"]] == DATA_COLUMNS
    stat = next(iter(meta["partitionToWriteStats"].values()))[0]
    assert list(stat) == [
        "fileId", "path", "cdcStats", "prevCommit", "numWrites", "numDeletes", "numUpdateWrites", "numInserts",
        "totalWriteBytes", "totalWriteErrors", "tempPath", "partitionPath", "totalLogRecords",
        "totalLogFilesCompacted", "totalLogSizeCompacted", "totalUpdatedRecordsCompacted", "totalLogBlocks",
        "totalCorruptLogBlock", "totalRollbackBlocks", "fileSizeInBytes", "minEventTime", "maxEventTime",
        "runtimeStats", "logVersion", "logOffset", "baseFile", "logFiles", "recordsStats",
    ]  # fmt: skip
    assert stat["prevCommit"] == i1 and stat["logVersion"] == 2 and stat["recordsStats"] == {"val": None}
    assert stat["numUpdateWrites"] == stat["numWrites"] and stat["numInserts"] == 0
    log_path = path / stat["path"]
    assert log_path.stat().st_size == stat["fileSizeInBytes"] == stat["totalWriteBytes"]
    assert stat["logFiles"][-1] == log_path.name and log_path.name.startswith(f".{stat['fileId']}_{i1}.log.2_")
    first = _commit(path, i1)
    for stats in first["partitionToWriteStats"].values():
        for s in stats:
            assert s["prevCommit"] == "null" and s["numInserts"] == s["numWrites"] and s["baseFile"] == ""
    # Partition metafiles carry the instant that created the partition; markers are gone after the commit.
    meta_file = (path / "region=r1" / ".hoodie_partition_metadata").read_text()
    assert meta_file.startswith("#partition metadata\n") and f"commitTime={i1}" in meta_file
    assert "partitionDepth=1" in meta_file
    assert not (path / ".hoodie" / ".temp" / i2).exists()
    for folder in (".schema", "archived", ".temp", ".aux/.bootstrap/.partitions", ".aux/.bootstrap/.fileids"):
        assert (path / ".hoodie" / folder).is_dir()
    props = t.refresh().properties
    assert props["hoodie.table.version"] == "6" and "hoodie.table.metadata.partitions" not in props
    cfg = t.config
    assert cfg.event_time_field == "ev" and cfg.ordering_field == "ts" and not cfg.min_event_time_header
    assert cfg.partition_fields == ("region",) and cfg.record_key_fields == ("id",) and cfg.timezone == "UTC"


def test_create_refuses_an_existing_table(tmp_path: Path) -> None:
    _create(tmp_path / "t", partitioned=False, merge_mode="commit_time")
    with pytest.raises(evt.TableConfigError, match="already exists"):
        _create(tmp_path / "t", partitioned=False, merge_mode="commit_time")


@pytest.mark.parametrize(
    "fields",
    [
        {"record_key": "id", "partition_by": "a/b"},
        {"record_key": "my id"},
        {"record_key": "id", "partition_by": ["region", "1st"]},
        {"record_key": "id", "ordering_field": "ts-ms"},
        {"record_key": "id", "event_time_field": "ev.", "ordering_field": "ts"},
    ],
)
def test_create_refuses_fields_no_write_could_hold(tmp_path: Path, fields: dict[str, Any]) -> None:
    """A table keyed, partitioned or ordered by a field Avro cannot name was created, after which every write was
    refused (the writer checks Avro names): refused at creation, with nothing on storage."""
    with pytest.raises(evt.TableConfigError, match="not an Avro field name"):
        evt.HudiTable.create(tmp_path / "t", "t", **fields)
    assert not (tmp_path / "t").exists()
    evt.HudiTable.create(tmp_path / "ok", "t", "id", partition_by="region", ordering_field="ts", event_time_field="ev")


def test_complex_keys_and_two_partition_levels(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = evt.HudiTable.create(path, "cx", ["id", "sub"], partition_by=["region", "day"], ordering_field="ts")
    assert t.config.key_generator == "org.apache.hudi.keygen.ComplexKeyGenerator"
    df = pd.DataFrame(
        {"id": [1, 1, 2], "sub": ["a", "b", "a"], "region": ["eu", "eu", "us"], "day": [1, 1, 2], "ts": [1, 2, 3]}
    )
    t.write(df)
    t.write(df.assign(ts=[9, 9, 9]).iloc[:1])
    ours = t.read()
    assert sorted(ours["_hoodie_record_key"].to_pylist()) == ["id:1,sub:a", "id:1,sub:b", "id:2,sub:a"]
    assert (path / "region=eu" / "day=1" / ".hoodie_partition_metadata").read_text().count("partitionDepth=2") == 1
    assert_same_rows(_hudi_rs(path), ours, ["id", "sub", "region", "day", "ts"], "complex keys")


# -- incremental and time travel ------------------------------------------------------------------------------------


@pytest.mark.parametrize("merge_mode", ["commit_time", "event_time"])
def test_time_travel_and_incremental_agree_with_hudi_rs(tmp_path: Path, merge_mode: str) -> None:
    path = tmp_path / "t"
    t = _create(path, partitioned=True, merge_mode=merge_mode, buckets=4)
    o = _oracle(True, merge_mode)
    snapshots: dict[str, pa.Table] = {}
    instants: list[str] = []
    history: list[tuple[str, pd.DataFrame]] = [
        ("upsert", _rows(list(range(20)), 1, seed=1)),
        ("upsert", _rows(list(range(10, 30)), 2, seed=2)),
        ("delete", _keys([0, 11, 25])),
        ("insert", _rows([0, 50, 51], 3, seed=3)),
        ("upsert", _rows([1, 2, 60], [7, 5, 5], seed=4)),
    ]
    for op, df in history:
        instants.append(_apply(t, o, op, df, options=SMALL_LOGS))
        snapshots[instants[-1]] = _expected(o)
    t.refresh()
    cols = [*DATA_COLUMNS, "_hoodie_commit_time"]
    rs = hudi.HudiTableBuilder.from_base_uri(str(path.resolve())).build()
    for inst in instants:
        ours = t.read(as_of=inst)
        assert_same_rows(ours, snapshots[inst], DATA_COLUMNS, f"ours as of {inst}")
        theirs = pa.Table.from_batches(rs.read(hudi.HudiReadOptions().with_as_of_timestamp(inst)))
        assert_same_rows(theirs, ours, cols, f"rs as of {inst}")
    windows = [(instants[0], instants[-1]), (instants[1], instants[3]), (instants[2], instants[4]), (None, instants[1])]
    for begin, end in windows:
        ours = t.read("incremental", begin=begin, end=end)
        opts = hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental).with_end_timestamp(end)
        if begin is not None:
            opts = opts.with_start_timestamp(begin)
        batches = rs.read(opts)
        theirs = pa.Table.from_batches(batches) if batches else ours.slice(0, 0)
        assert ours.num_rows > 0
        assert_same_rows(theirs, ours, cols, f"rs incremental ({begin}, {end}]")


def test_incremental_of_a_losing_late_update_is_not_a_change(tmp_path: Path) -> None:
    """An update that loses the event-time merge changes nothing: the window answers the table at its end, where the
    earlier, higher record still stands. hudi-rs merges the window's blocks alone and returns the losing record."""
    path = tmp_path / "t"
    t = _create(path, partitioned=False, merge_mode="event_time", buckets=1)
    first = t.write(_rows([1, 2], 5))
    last = t.write(_rows([1, 3], 1))  # ts 1 < 5: key 1 loses the merge; key 3 is new
    ours = t.read("incremental", begin=first, end=last)
    assert ours["id"].to_pylist() == [3]
    assert ours["_hoodie_commit_time"].to_pylist() == [last]
    rs = hudi.HudiTableBuilder.from_base_uri(str(path.resolve())).build()
    opts = hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental)
    theirs = pa.Table.from_batches(rs.read(opts.with_start_timestamp(first).with_end_timestamp(last)))
    assert sorted(theirs["id"].to_pylist()) == [1, 3], "hudi-rs: the window's blocks alone"
    snap = pa.Table.from_batches(rs.read(hudi.HudiReadOptions().with_as_of_timestamp(last)))
    assert sorted(snap.filter(pc.equal(snap["_hoodie_commit_time"], last))["id"].to_pylist()) == [3]


# -- min event time header --------------------------------------------------------------------------------------------


def _block_minimums(t: evt.HudiTable) -> dict[tuple[str, int], int]:
    """Exact minimum of ``ev`` per data block, decoded from the blocks themselves."""
    out: dict[tuple[str, int], int] = {}
    for s in t.view.latest_file_slices():
        for lf in s.log_files:
            with t.storage.open_input(lf.path) as f:
                for blk in scan_log_blocks(f, lf.size, lf.path):
                    if blk.is_data:
                        out[(lf.name, blk.offset)] = min(read_block_records(f, blk)["ev"].to_pylist())
    return out


@pytest.mark.parametrize("header", [True, False], ids=["header", "write_stats"])
def test_min_event_time_sources(tmp_path: Path, header: bool) -> None:
    path = tmp_path / "t"
    t = _create(path, partitioned=True, merge_mode="event_time", buckets=4, min_event_time_header=header)
    assert t.config.min_event_time_header is header
    o = _oracle(True, "event_time")
    _apply(t, o, "upsert", _rows(list(range(30)), 1, seed=7))
    _apply(t, o, "upsert", _rows(list(range(20, 50)), 2, seed=8))
    _apply(t, o, "delete", _keys([1, 2]))
    t.refresh()
    assert_same_rows(t.read(), _expected(o), DATA_COLUMNS, "header table")
    blocks = t.inspect.log_blocks()
    data = blocks.filter(pa.compute.equal(blocks["block_type"], "AVRO_DATA"))
    assert data.num_rows > 0
    assert set(data["min_event_time_source"].to_pylist()) == {"header" if header else "write_stats"}
    exact = _block_minimums(t)
    got = dict(zip(zip(data["log_file"].to_pylist(), data["offset"].to_pylist(), strict=True),
                   data["min_event_time"].to_pylist(), strict=True))  # fmt: skip
    assert got == exact
    if header:
        # Documented consequence (design §2.2): stock readers cannot read header-mode tables.
        with pytest.raises(Exception, match=r"(?i)metadata key|invalid"):
            _hudi_rs(path)
    else:
        assert_same_rows(_hudi_rs(path), _expected(o), DATA_COLUMNS, "hudi-rs")


# -- failures ---------------------------------------------------------------------------------------------------------


class _Crash(RuntimeError):
    pass


def test_failed_task_leaves_the_table_as_before(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _create(path, partitioned=True, merge_mode="commit_time", buckets=8)
    o = _oracle(True, "commit_time")
    first = _apply(t, o, "upsert", _rows(list(range(12)), 1, seed=1))
    before_ours, before_rs = t.read(), _hudi_rs(path)
    written: list[FileGroupWrite] = []

    def crash_after_two(spec: WriteJobSpec, tasks: list[tuple[FileGroupWrite, pa.Table, pa.Table]]) -> Any:
        # One task appending to an existing slice and one creating a new log-only file group, then a crash.
        old = next(task for task in tasks if not task[0].is_new_file_group)
        new = next(task for task in tasks if task[0].is_new_file_group)
        for i, (fg, up, de) in enumerate((old, new)):
            write_file_group(spec, fg, up, de, task_partition_id=i)
            written.append(fg)
        raise _Crash("executor lost")

    # Existing keys (old buckets) and many new keys (new buckets, i.e. new log-only file groups).
    batch = _rows([*range(12), *range(100, 160)], 2, seed=2)
    with pytest.raises(WriteError, match=r"deltacommit \d{17} of .*/t failed") as info:
        t.write(batch, executor=crash_after_two)
    failed = str(info.value).split()[1]
    assert [fg.is_new_file_group for fg in written] == [False, True]
    assert (path / ".hoodie" / f"{failed}.deltacommit.inflight").exists()
    assert not (path / ".hoodie" / f"{failed}.deltacommit").exists()
    assert list((path / ".hoodie" / ".temp" / failed).rglob("*.marker.APPEND"))
    t.refresh()
    assert_same_rows(t.read(), before_ours, DATA_COLUMNS, "ours after failure")
    assert_same_rows(_hudi_rs(path), before_rs, DATA_COLUMNS, "hudi-rs after failure")
    # The next write succeeds, later than the failed instant, and skips the versions the failed one used.
    nxt = _apply(t, o, "upsert", _rows([0, 1, 200], 3, seed=3))
    assert first < failed < nxt
    _check(t, o, "after recovery")


def test_existing_log_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _create(path, partitioned=False, merge_mode="commit_time", buckets=1)
    t.write(_rows([1], 1))
    t.refresh()
    [s] = t.view.latest_file_slices()
    # A task planned with a stale version (1) and the token that wrote version 1 must not clobber it.
    fg = FileGroupWrite("", s.file_id, 0, s.base_instant, None, 1, (), s.base_instant)
    existing = s.log_files[0].name
    task_id = int(existing.rsplit("_", 1)[1].split("-")[0])
    schema = json.loads(_commit(path, s.base_instant)["extraMetadata"]["schema"])
    spec = WriteJobSpec(str(path), "29990101000000000", "upsert", avro_schema_json(with_meta_fields(schema)),
                        ("id",), (), "ts", "ev", "ms", False, 1 << 30, "rt_table")  # fmt: skip
    up, de = prepare_batch(spec, pa.Table.from_pandas(_rows([1], 2), preserve_index=False), 1, "id")
    with pytest.raises(WriteError, match=existing.replace(".", r"\.")):
        write_file_group(spec, fg, up, de, task_partition_id=task_id)


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("operation", ["upsert", "insert"])
def test_one_key_in_two_partitions_of_a_batch_is_two_records(tmp_path: Path, version: int, operation: str) -> None:
    """Hudi de-duplicates a batch by ``HoodieKey`` — record key *and* partition path — unless the index is global
    (``HoodieWriteHelper.deduplicateRecords``): one key in two partitions is two records, in one batch as in two,
    and a delete batch naming both removes both."""
    import hudi

    from tests.tables import create, rows

    t = create(tmp_path / "t", "event_time", buckets=2, table_version=version)
    batch = rows([1, 1, 2, 2], 10, 100)
    batch["region"] = ["r0", "r1", "r0", "r0"]
    batch["ts"] = [10, 10, 11, 12]
    t.write(batch, operation)
    want = [(1, "r0", 10), (1, "r1", 10), (2, "r0", 12)]
    got = t.refresh().read(columns=["id", "region", "ts"]).to_pylist()
    assert sorted((r["id"], r["region"], r["ts"]) for r in got) == want
    rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(tmp_path / "t")).build().read())
    assert sorted((r["id"], r["region"], r["ts"]) for r in rs.select(["id", "region", "ts"]).to_pylist()) == want
    gone = rows([1, 1], 20, 100)[["id", "region", "ts"]]
    gone["region"] = ["r0", "r1"]
    t.write(gone, "delete")
    assert [(r["id"], r["region"]) for r in t.refresh().read(columns=["id", "region"]).to_pylist()] == [(2, "r0")]


# -- bad input --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "error", "match"),
    [
        (lambda df: df.drop(columns=["id"]), SchemaMismatchError, "record key field 'id'"),
        (lambda df: df.drop(columns=["ts"]), SchemaMismatchError, "ordering .* field 'ts'"),
        (lambda df: df.drop(columns=["ev"]), SchemaMismatchError, "event-time field 'ev'"),
        (lambda df: df.drop(columns=["region"]), SchemaMismatchError, "partition field 'region'"),
        (lambda df: df.assign(ev=df["ev"].astype(str)), SchemaMismatchError, "event-time field 'ev' has type"),
        (lambda df: df.assign(id=pd.array([None, *df["id"][1:]], dtype="Int64")), WriteError, "'id' is null"),
        (lambda df: df.assign(extra=1), SchemaMismatchError, "'extra' are not in the table schema"),
        (lambda df: df.assign(v=df["v"].astype(str)), SchemaMismatchError, "column 'v'"),
        (lambda df: pd.concat([df, df[["ts"]]], axis=1), SchemaMismatchError, "converted to Arrow: Duplicate column"),
        (
            lambda df: (b := pa.Table.from_pandas(df, preserve_index=False)).append_column("ts", b["ts"]),
            SchemaMismatchError,
            "more than one column named 'ts'",
        ),
        (lambda df: df.assign(v=[1.5, "x", None]), SchemaMismatchError, "cannot be converted to Arrow"),
    ],
    ids=[
        "no-key",
        "no-ordering",
        "no-event-time",
        "no-partition",
        "event-time-type",
        "null-key",
        "extra",
        "type",
        "column-twice",
        "arrow-column-twice",
        "mixed-objects",
    ],
)
def test_bad_input_is_refused_before_anything_is_written(tmp_path: Path, mutate: Any, error: type, match: str) -> None:
    path = tmp_path / "t"
    t = _create(path, partitioned=True, merge_mode="event_time", buckets=2)
    t.write(_rows([1, 2, 3], 1))
    files_before = sorted(str(p) for p in path.rglob("*"))
    with pytest.raises(error, match=match):
        t.write(mutate(_rows([1, 4, 5], 2)))
    assert sorted(str(p) for p in path.rglob("*")) == files_before


def test_bad_operation(tmp_path: Path) -> None:
    t = _create(tmp_path / "t", partitioned=False, merge_mode="commit_time")
    with pytest.raises(WriteError, match="unknown write operation 'merge'"):
        t.write(_rows([1], 1), "merge")


def _rewrite_properties(path: Path, **changes: str) -> None:
    from evt_toolkit.format.properties import parse_properties

    props_file = path / ".hoodie" / "hoodie.properties"
    props = parse_properties(props_file.read_text())
    props.update(changes)
    props_file.write_text(dump_properties(props))


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"hoodie.table.type": "COPY_ON_WRITE"}, "not MERGE_ON_READ"),
        # Versions 8 and 9 are written (tests/write/test_write_1x.py), but not with a metadata table.
        (
            {
                "hoodie.table.version": "8",
                "hoodie.timeline.layout.version": "2",
                "hoodie.table.metadata.partitions": "files",
            },
            "metadata table",
        ),
    ],
    ids=["cow", "v8-with-metadata-table"],
)
def test_unsupported_tables_are_refused(tmp_path: Path, changes: dict[str, str], match: str) -> None:
    path = tmp_path / "t"
    _create(path, partitioned=False, merge_mode="commit_time")
    _rewrite_properties(path, **changes)
    t = evt.HudiTable.open(path)
    before = sorted(str(p) for p in path.rglob("*"))
    with pytest.raises(UnsupportedTableError, match=match):
        t.write(_rows([1], 1))
    assert sorted(str(p) for p in path.rglob("*")) == before


def test_pending_clustering_blocks_writes(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _create(path, partitioned=False, merge_mode="commit_time")
    t.write(_rows([1], 1))
    (path / ".hoodie" / "29990101000000000.replacecommit.requested").write_bytes(b"")
    with pytest.raises(evt.PendingTableServiceError, match="29990101000000000"):
        t.write(_rows([2], 1))


def test_write_to_pending_compaction_slice(tmp_path: Path) -> None:
    """A hand-made pending compaction plan: writes go to slice C after the versions the plan reserves."""
    from evt_toolkit.format.metadata import encode_avro_container, load_schema

    path = tmp_path / "t"
    t = _create(path, partitioned=False, merge_mode="commit_time", buckets=1)
    o = _oracle(False, "commit_time")
    b1 = _apply(t, o, "upsert", _rows([1, 2, 3], 1))
    t.refresh()
    [s] = t.view.latest_file_slices()
    c = "29980101000000000"
    op = {
        "baseInstantTime": b1, "deltaFilePaths": [s.log_files[0].name], "dataFilePath": None, "fileId": s.file_id,
        "partitionPath": "", "metrics": None, "bootstrapFilePath": None,
    }  # fmt: skip
    plan = {"operations": [op], "extraMetadata": None, "version": 2, "strategy": None, "preserveHoodieMetadata": False}
    schema = json.loads(load_schema("HoodieCompactionPlan"))
    data = encode_avro_container(plan, json.dumps(schema))
    (path / ".hoodie" / f"{c}.compaction.requested").write_bytes(data)
    t.refresh()
    assert t.timeline.compaction_plan(t.timeline.instant(c)).operations[0].file_id == s.file_id
    # The stock plan schema has no symlinkOperations field: reserve the link versions through the planner's input.
    from evt_toolkit.write import writer as writer_module
    from evt_toolkit.write.plan import PendingCompactionReservation

    original = writer_module._pending_reservations
    writer_module._pending_reservations = lambda table: [  # type: ignore[assignment]
        PendingCompactionReservation("", s.file_id, c, (1, 2))
    ]
    try:
        inst = t.write(_rows([2], 5))
    finally:
        writer_module._pending_reservations = original  # type: ignore[assignment]
    [stat] = next(iter(_commit(path, inst)["partitionToWriteStats"].values()))
    assert stat["path"].startswith(f".{s.file_id}_{c}.log.3_") and stat["prevCommit"] == c
    assert stat["baseFile"] == ""
    o.apply("upsert", _rows([2], 5))
    assert_same_rows(t.refresh().read(), _expected(o), DATA_COLUMNS, "pending compaction")


# -- random histories -------------------------------------------------------------------------------------------------


@st.composite
def _histories(draw: st.DrawFn) -> tuple[bool, str, list[tuple[str, list[int], list[int]]]]:
    partitioned = draw(st.booleans())
    merge_mode = draw(st.sampled_from(["commit_time", "event_time"]))
    n_ops = draw(st.integers(1, 5))
    written: set[int] = set()
    ops: list[tuple[str, list[int], list[int]]] = []
    for _ in range(n_ops):
        if written and draw(st.integers(0, 3)) == 0:
            ids = draw(st.lists(st.sampled_from(sorted(written)), min_size=1, max_size=6))
            ops.append(("delete", ids, draw(st.lists(st.integers(0, 9), min_size=len(ids), max_size=len(ids)))))
            continue
        op = draw(st.sampled_from(["upsert", "insert"]))
        ids = draw(st.lists(st.integers(0, 40), min_size=1, max_size=25))
        ops.append((op, ids, draw(st.lists(st.integers(0, 9), min_size=len(ids), max_size=len(ids)))))
        written.update(ids)
    return partitioned, merge_mode, ops


@pytest.fixture
def scratch() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="evt-prop-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@settings(
    max_examples=PROPERTY_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=_histories(), natural_deletes=st.booleans())
def test_random_histories_agree(
    scratch: Path, history: tuple[bool, str, list[tuple[str, list[int], list[int]]]], natural_deletes: bool
) -> None:
    partitioned, merge_mode, ops = history
    path = Path(tempfile.mkdtemp(dir=scratch))
    t = _create(path, partitioned=partitioned, merge_mode=merge_mode, buckets=4)
    o = _oracle(partitioned, merge_mode)
    for k, (op, ids, ts) in enumerate(ops):
        df = _keys(ids, None if natural_deletes else ts) if op == "delete" else _rows(ids, ts, seed=k)
        _apply(t, o, op, df, options=SMALL_LOGS)
    _check(t, o, f"history {ops}")
