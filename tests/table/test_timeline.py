"""Timeline loading against every fixture (fixture.json is the expected end state) and synthetic timelines."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evt_toolkit.errors import MetadataDecodeError, TimelineError
from evt_toolkit.format.metadata import encode_commit_metadata_json
from evt_toolkit.format.properties import dump_properties, table_checksum
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.table.config import TableConfig, load_table_config
from evt_toolkit.table.timeline import Instant, InstantState, Timeline
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR, fixture_names, fixture_table_path


def _load(fixture: str) -> Timeline:
    storage = TableStorage.from_uri(fixture_table_path(fixture))
    return Timeline.load(storage, load_table_config(storage))


def _fixture_meta(fixture: str) -> dict[str, object]:
    meta: dict[str, object] = json.loads((TABLES_DIR / fixture / "fixture.json").read_text())
    return meta


@SKIP_NO_SHARED
@pytest.mark.parametrize("fixture", fixture_names())
def test_fixture_timeline_matches_fixture_json(fixture: str) -> None:
    """fixture.json: "completed" counts completed instants per (reported) action; "pending" lists their files."""
    tl = _load(fixture)
    meta = _fixture_meta(fixture)
    assert dict(Counter(i.action for i in tl.completed())) == meta["completed"]
    pending_files = sorted(
        Path(f).name for i in tl.pending() for f in (tl.state_file(i, s) for s in InstantState) if f is not None
    )
    assert pending_files == sorted(meta["pending"])  # type: ignore[call-overload]
    assert tl.layout_version == int(meta["layout"])  # type: ignore[call-overload]
    # Sorted by (time, comparable action); one instant per such pair.
    keys = [(i.time, i.comparable_action) for i in tl.instants]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    for inst in tl.instants:
        assert (fixture_table_path(fixture) / inst.file_name).is_file()
        if tl.layout_version == 2:
            assert (inst.completion_time is not None) == inst.is_completed
            if inst.completion_time is not None:
                assert inst.completion_time >= inst.time
                assert tl.completion_time(inst.time) == inst.completion_time
        else:
            assert inst.completion_time is None
    # Every commit's metadata decodes through the timeline (and is cached).
    for inst in tl.completed_commits():
        meta_a = tl.commit_metadata(inst)
        assert tl.commit_metadata(inst) == meta_a


@SKIP_NO_SHARED
def test_v6_uncommitted_log_has_inflight_deltacommit() -> None:
    tl = _load("mor_table_uncommitted_log_v6")
    (pending,) = tl.pending()
    assert (pending.time, pending.action, pending.state) == ("20260815174509450", "deltacommit", InstantState.INFLIGHT)
    assert pending.is_inflight and not pending.is_completed
    assert pending.file_name == ".hoodie/20260815174509450.deltacommit.inflight"
    assert tl.inflight_writes() == [pending]
    assert not tl.is_completed_commit_time("20260815174509450")
    assert tl.is_completed_commit_time("20260815174505835")
    last = tl.last_completed_commit()
    assert last is not None and last.time == "20260815174512044"
    # The inflight workload file is JSON commit metadata; the requested file is empty.
    assert tl.commit_metadata(pending).write_stats
    assert tl.read_bytes(pending, InstantState.REQUESTED) == b""
    with pytest.raises(TimelineError, match=r"20260815174509450\.deltacommit"):
        tl.read_bytes(pending, InstantState.COMPLETED)


@SKIP_NO_SHARED
def test_v9_uncommitted_log_has_inflight_deltacommit() -> None:
    tl = _load("mor_table_uncommitted_log_v9")
    (pending,) = tl.inflight_writes()
    assert pending.time == "20260815174515144" and pending.is_inflight
    assert pending.file_name == ".hoodie/timeline/20260815174515144.deltacommit.inflight"


@SKIP_NO_SHARED
def test_v9_completion_times_and_compaction_as_commit() -> None:
    tl = _load("mor_v9_txns_simple_nometa")
    compaction = tl.instant("20260307135839895")
    assert compaction.action == "commit" and compaction.is_completed
    assert compaction.completion_time == "20260307135840408"
    assert compaction.file_name == ".hoodie/timeline/20260307135839895_20260307135840408.commit"
    assert tl.instant("20260307135839895", "compaction") == compaction
    plan = tl.compaction_plan(compaction)
    assert plan.operations and all(op.base_instant for op in plan.operations)
    assert tl.commit_metadata(compaction).compacted is True

    clustering = tl.instant("20260307135840454")
    assert clustering.action == "replacecommit" and clustering.completion_time == "20260307135840902"
    assert tl.replace_requested(clustering)["operationType"] == "CLUSTER"
    assert tl.completion_time("20260307135827749") == "20260307135829538"
    assert tl.completion_time("19990101000000000") is None
    assert tl.pending() == [] and tl.pending_compactions() == [] and tl.pending_clustering() == []
    assert {i.action for i in tl.write_timeline()} == {"deltacommit", "commit", "replacecommit"}


@SKIP_NO_SHARED
@pytest.mark.parametrize(
    "fixture",
    [
        "cow_v9_txns_simple_nometa",
        "mor_v9_txns_complex_meta",
        "mor_v9_txns_nonpart_meta",
        "mor_v9_txns_simple_meta",
        "mor_v9_txns_simple_nometa",
        "mor_v9_txns_simple_overwrite",
    ],
)
def test_replaced_file_groups_of_v9_tables(fixture: str) -> None:
    tl = _load(fixture)
    replaced = tl.replaced_file_groups()
    assert replaced
    replace_times = {i.time for i in tl.completed_commits() if i.action == "replacecommit"}
    assert set(replaced.values()) <= replace_times
    first = min(replace_times)
    assert tl.replaced_file_groups(as_of=first) == {k: v for k, v in replaced.items() if v <= first}
    assert tl.replaced_file_groups(as_of="00000000000000000") == {}


@SKIP_NO_SHARED
def test_v9_rollback_accessors() -> None:
    tl = _load("mor_v9_nonpartitioned_rollback")
    rb = tl.instant("20260403184259077")
    assert rb.action == "rollback" and rb.is_completed
    assert tl.rollback_plan(rb).target == "20260403184242950"
    assert tl.rollback_metadata(rb)["commitsRollback"] == ["20260403184242950"]
    # The rolled-back instant left no files.
    with pytest.raises(TimelineError, match="20260403184242950"):
        tl.instant("20260403184242950")
    with pytest.raises(TimelineError, match=r"clean\.requested"):
        tl.clean_plan(rb)


@SKIP_NO_SHARED
def test_v8_indexing_is_not_a_commit() -> None:
    tl = _load("mor_v8_trips_8i3u1d")
    assert not tl.is_completed_commit_time("20251220210117766")
    assert tl.instant("20251220210117766").action == "indexing"
    assert all(i.action != "indexing" for i in tl.write_timeline())
    assert tl.is_before_timeline_start("20251220210108077")
    assert not tl.is_before_timeline_start("20251220210108078")


@SKIP_NO_SHARED
def test_empty_v6_table() -> None:
    tl = _load("mor_v6_empty")
    assert tl.instants == () and tl.last_completed_commit() is None
    assert not tl.is_before_timeline_start("20250101000000000")


@SKIP_NO_SHARED
def test_log_compaction_completes_as_deltacommit() -> None:
    tl = _load("mor_table_log_compaction")
    inst = tl.instant("20260409030522412")
    assert inst.action == "deltacommit" and inst.is_completed
    assert tl.compaction_plan(inst).operations


# -- synthetic layout-1 timeline --------------------------------------------------------------------------------------


def _v6_table(tmp_path: Path, files: dict[str, bytes]) -> tuple[TableStorage, TableConfig]:
    hoodie = tmp_path / ".hoodie"
    for sub in ("archived", ".aux/.bootstrap", ".temp/1", ".schema", "metadata/.hoodie"):
        (hoodie / sub).mkdir(parents=True, exist_ok=True)
    props = {
        "hoodie.table.name": "t",
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": "6",
        "hoodie.timeline.layout.version": "1",
        "hoodie.table.checksum": str(table_checksum("t", None)),
    }
    (hoodie / "hoodie.properties").write_text(dump_properties(props, "Properties saved on test"))
    for name, data in files.items():
        (hoodie / name).write_bytes(data)
    (hoodie / "archived" / "100.commit").write_bytes(b"")  # must be ignored: sub-folder
    storage = TableStorage.from_uri(tmp_path)
    return storage, load_table_config(storage)


def _commit(op: str = "UPSERT", replaced: dict[str, list[str]] | None = None) -> bytes:
    meta: dict[str, object] = {
        "partitionToWriteStats": {},
        "compacted": op == "COMPACT",
        "extraMetadata": {},
        "operationType": op,
    }
    if replaced is not None:
        meta["partitionToReplaceFileIds"] = replaced
    return encode_commit_metadata_json(meta)


def test_layout1_grouping_and_views(tmp_path: Path) -> None:
    files = {
        "001.deltacommit.requested": b"",
        "001.deltacommit.inflight": b"",
        "001.deltacommit": _commit(),
        "002.compaction.requested": b"",
        "002.compaction.inflight": b"",
        "002.commit": _commit("COMPACT"),
        "003.compaction.requested": b"",
        "004.deltacommit.requested": b"",
        "004.deltacommit.inflight": b"",
        "005.replacecommit.requested": b"",
        "005.replacecommit.inflight": b"",
        "005.replacecommit": _commit("CLUSTER", {"p": ["f1", "f2"]}),
        "006.replacecommit.requested": b"",
        "007.clean.requested": b"",
        "008.commit.requested": b"",
        "008.inflight": b"",
        "009.savepoint.inflight": b"",
        "009.savepoint": b"",
        ".001.deltacommit.crc": b"",
    }
    storage, cfg = _v6_table(tmp_path, files)
    tl = Timeline.load(storage, cfg)
    got = [(i.time, i.action, i.state.value) for i in tl.instants]
    assert got == [
        ("001", "deltacommit", "COMPLETED"),
        ("002", "commit", "COMPLETED"),
        ("003", "compaction", "REQUESTED"),
        ("004", "deltacommit", "INFLIGHT"),
        ("005", "replacecommit", "COMPLETED"),
        ("006", "replacecommit", "REQUESTED"),
        ("007", "clean", "REQUESTED"),
        ("008", "commit", "INFLIGHT"),
        ("009", "savepoint", "COMPLETED"),
    ]
    assert tl.instant("002").file_name == ".hoodie/002.commit"
    assert tl.instant("008").file_name == ".hoodie/008.inflight"
    assert [i.time for i in tl.completed_commits()] == ["001", "002", "005"]
    assert [i.time for i in tl.pending_compactions()] == ["003"]
    assert [i.time for i in tl.pending_clustering()] == ["006"]
    assert [i.time for i in tl.inflight_writes()] == ["004", "008"]
    assert [i.time for i in tl.pending()] == ["003", "004", "006", "007", "008"]
    assert [i.time for i in tl.write_timeline()] == ["001", "002", "003", "004", "005", "006", "008"]
    last = tl.last_completed_commit()
    assert last is not None and last.time == "005"
    assert tl.replaced_file_groups() == {("p", "f1"): "005", ("p", "f2"): "005"}
    assert tl.replaced_file_groups(as_of="004") == {}
    assert tl.is_before_timeline_start("000") and not tl.is_before_timeline_start("001")
    assert tl.completion_time("001") is None
    assert tl.read_bytes(tl.instant("002"), InstantState.REQUESTED) == b""
    with pytest.raises(MetadataDecodeError, match=r"002\.compaction\.requested"):
        tl.compaction_plan(tl.instant("002"))  # an empty file is not a plan
    with pytest.raises(TimelineError, match=r"001\.compaction\.requested"):
        tl.compaction_plan(tl.instant("001"))
    with pytest.raises(TimelineError, match="not found"):
        tl.instant("010")


def test_before_timeline_start_skips_savepointed_instants(tmp_path: Path) -> None:
    files = {
        "001.commit": _commit(),
        "001.savepoint": b"",
        "003.deltacommit": _commit(),
    }
    storage, cfg = _v6_table(tmp_path, files)
    tl = Timeline.load(storage, cfg)
    assert tl.is_before_timeline_start("002")
    assert not tl.is_before_timeline_start("003")


def test_corrupt_commit_file_names_the_file(tmp_path: Path) -> None:
    storage, cfg = _v6_table(tmp_path, {"001.deltacommit": b"{ not json"})
    tl = Timeline.load(storage, cfg)
    with pytest.raises(MetadataDecodeError, match=r"001\.deltacommit"):
        tl.commit_metadata(tl.instant("001"))


def test_missing_file_after_load_names_the_file(tmp_path: Path) -> None:
    storage, cfg = _v6_table(tmp_path, {"001.deltacommit": _commit()})
    tl = Timeline.load(storage, cfg)
    (tmp_path / ".hoodie" / "001.deltacommit").unlink()
    with pytest.raises(TimelineError, match=r"001\.deltacommit"):
        tl.commit_metadata(tl.instant("001"))


def test_instant_properties() -> None:
    i = Instant("1", "compaction", InstantState.REQUESTED, None, ".hoodie/1.compaction.requested")
    assert i.is_requested and not i.is_inflight and not i.is_completed
    assert i.comparable_action == "commit"
    assert InstantState.COMPLETED == "COMPLETED"
    with pytest.raises(AttributeError):
        i.time = "2"  # type: ignore[misc]
