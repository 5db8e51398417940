"""Stock Hudi table features that change what a writer, compactor, cleaner or rollback must do: every writing
operation either handles them as Hudi does or refuses them before it touches anything.

Drives, on tables the writer built (versions 6 and 9) with the feature set in ``hoodie.properties`` or on the
timeline the way stock Hudi sets it (the checksum covers the table name only, so it stays valid), and on copies of
stock fixtures:

* change data capture (``hoodie.table.cdc.enabled``), a bootstrapped table (``hoodie.bootstrap.base.path``), another
  log file format, several base file formats, another table format, schema-on-read evolution (``latest_schema`` in
  the commits) and a restore in progress: a write, a delete, a compaction schedule, a run of a plan scheduled
  before, an unschedule, a clean, a rollback of a failed write and a repair are each refused with an
  ``UnsupportedTableError`` naming the table and the setting, and every byte of the table stays as it was; queries
  of a bootstrapped table are refused too (its skeleton base files hold no data columns);
* the stock partial-update tables (v9 ``IS_PARTIAL`` blocks, by commit time and by event time) and the HFile-block
  table: the compaction is refused when it is *scheduled*, naming the table and the log, with nothing written (the
  plan was written and then every task refused it);
* the same refusals of a Spark DataFrame write (``t.write(df, spark=...)`` and ``write_dataframe``);
* a write to a table whose bucket layout Hudi keeps in ``.hoodie/.bucket_index`` (consistent hashing, 1.1's
  partition-level buckets), by the bucket or the SIMPLE index, and a write with a timestamp or custom key
  generator, are refused, the table unchanged;
* a write to a table with URL-encoded partition paths is refused on version 6 as on 9;
* a version-6 or 8 table with a payload class or merge strategy id of its own (Hudi's CUSTOM merge mode) is
  refused by every operation that merges (snapshot, write, schedule), its read-optimized view read;
* a savepointed deltacommit is not rolled back (Hudi's ``validateSavepointRollbacks``), the table unchanged;
* file groups a pending log compaction holds are left out of a compaction plan, and an event-time plan waits for
  the log compaction, as for a pending compaction or clustering;
* a pending clustering (a stock plan re-aimed at the table's file group) holds off compaction schedules and writes,
  the table unchanged, and the file groups it holds are the ones a plan would leave out.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

import evt_toolkit as evt
import evt_toolkit.compaction.schedule as schedule_module
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.compaction.event_times import held_by_other_table_services
from evt_toolkit.compaction.trigger import should_compact
from evt_toolkit.errors import PendingTableServiceError, RollbackError, UnsupportedFeatureError, UnsupportedTableError
from evt_toolkit.format.metadata import decode_replace_requested, encode_avro_container, load_schema
from evt_toolkit.format.ownership import LINK, SCHEDULE, OwnedFile
from evt_toolkit.spark.executor import write_dataframe
from evt_toolkit.storage.ownership import record_ownership
from tests.conftest import SKIP_NO_SHARED, fixture_table_path
from tests.faults import assert_killed, run_child

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _tree(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(path.rglob("*"))
    }


def _batch(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "v": pa.array([float(i * ts) for i in ids]),
        }
    )


def _timeline_dir(root: Path, version: int) -> Path:
    return root / ".hoodie" / "timeline" if version >= 8 else root / ".hoodie"


def _completed_file(root: Path, version: int, instant: str) -> Path:
    (found,) = [p for p in _timeline_dir(root, version).glob(f"{instant}*.deltacommit") if p.is_file()]
    return found


def _built(root: Path, version: int) -> tuple[evt.HudiTable, str, str]:
    """A table with two committed writes, a pending compaction plan and a failed (inflight) write after it."""
    t = evt.HudiTable.create(root, "features", "id", ordering_field="ts", buckets=1, table_version=version)
    t.write(_batch([1, 2, 3], 1))
    t.write(_batch([2, 3, 4], 2))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    failed = t.write(_batch([4, 5], 3))
    _completed_file(root, version, failed).unlink()  # the write failed before it completed: left inflight
    return evt.HudiTable.open(root), c.instant, failed


def _add_properties(root: Path, lines: str) -> None:
    props = root / ".hoodie" / "hoodie.properties"
    keys = {line.split("=", 1)[0] for line in lines.splitlines() if line}
    kept = [line for line in props.read_text().splitlines() if line.split("=", 1)[0] not in keys]
    props.write_text("".join(line + "\n" for line in kept) + lines)


def _set_latest_schema(root: Path, version: int, instant: str) -> None:
    """What a writer with ``hoodie.schema.on.read.enable=true`` adds to each commit (v6 commits are JSON)."""
    assert version == 6
    path = _completed_file(root, version, instant)
    meta = json.loads(path.read_text())
    meta["extraMetadata"]["latest_schema"] = json.dumps(
        {"max_column_id": 3, "version_id": int(instant), "type": "record", "fields": []}
    )
    path.write_text(json.dumps(meta, indent=2))


def _start_restore(root: Path, version: int) -> None:
    tl = _timeline_dir(root, version)
    for suffix in ("restore.requested", "restore.inflight"):
        (tl / f"29991231000000000.{suffix}").write_bytes(b"")


FEATURES: dict[str, tuple[str, Callable[[Path, int, str], None]]] = {
    "cdc": (
        "hoodie.table.cdc.enabled",
        lambda root, v, last: _add_properties(
            root, "hoodie.table.cdc.enabled=true\nhoodie.table.cdc.supplemental.logging.mode=DATA_BEFORE_AFTER\n"
        ),
    ),
    "bootstrap": (
        "hoodie.bootstrap.base.path",
        lambda root, v, last: _add_properties(root, f"hoodie.bootstrap.base.path={root.parent / 'source'}\n"),
    ),
    "log file format": (
        "hoodie.table.log.file.format",
        lambda root, v, last: _add_properties(root, "hoodie.table.log.file.format=PARQUET\n"),
    ),
    "multiple base file formats": (
        "hoodie.table.multiple.base.file.formats.enable",
        lambda root, v, last: _add_properties(root, "hoodie.table.multiple.base.file.formats.enable=true\n"),
    ),
    "table format": (
        "hoodie.table.format",
        lambda root, v, last: _add_properties(root, "hoodie.table.format=other\n"),
    ),
    "restore in progress": ("restore 29991231000000000", lambda root, v, last: _start_restore(root, v)),
}
CASES = [(name, 9) for name in FEATURES] + [("cdc", 6), ("bootstrap", 6), ("schema on read", 6)]


def _operations(t: evt.HudiTable, c: str, failed: str) -> dict[str, Callable[[], object]]:
    return {
        "write": lambda: t.write(_batch([6], 4)),
        "write pandas": lambda: t.write(_batch([7], 4).to_pandas()),
        "delete": lambda: t.write(_batch([1], 5), operation="delete"),
        "schedule": lambda: t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=10)),
        "run": lambda: t.compaction.run(c),
        "unschedule": lambda: t.compaction.unschedule(c, dry_run=False),
        "clean": lambda: t.clean(dry_run=False),
        "rollback": lambda: t.rollback(failed),
        "repair": lambda: t.compaction.repair(dry_run=False),
    }


@pytest.mark.parametrize(("feature", "version"), CASES, ids=[f"{f}-v{v}" for f, v in CASES])
def test_every_writing_operation_refuses_a_table_feature_it_does_not_keep(
    tmp_path: Path, feature: str, version: int
) -> None:
    root = tmp_path / "t"
    t, c, failed = _built(root, version)
    snapshot = t.read()
    if feature == "schema on read":
        setting = "latest_schema"
        last = [i for i in t.timeline.completed_commits()][-1].time
        _set_latest_schema(root, version, last)
    else:
        setting, mutate = FEATURES[feature]
        mutate(root, version, failed)
    t = evt.HudiTable.open(root)
    before = _tree(tmp_path)
    operations = _operations(t, c, failed)
    if feature == "bootstrap":  # a skeleton base file's columns live in its source file: queries are refused too
        operations.update({"snapshot": lambda: t.read(), "read optimized": lambda: t.read("read_optimized")})
    for what, attempt in operations.items():
        with pytest.raises(UnsupportedTableError) as err:
            attempt()
        message = str(err.value)
        assert str(root) in message and setting in message, (what, message)
        assert _tree(tmp_path) == before, what
    if feature != "bootstrap":
        assert t.read().equals(snapshot)


@pytest.mark.parametrize("version", [6, 9])
def test_a_savepointed_deltacommit_is_not_rolled_back(tmp_path: Path, version: int) -> None:
    root = tmp_path / "t"
    t = evt.HudiTable.create(root, "features", "id", ordering_field="ts", buckets=1, table_version=version)
    t.write(_batch([1, 2], 1))
    last = t.write(_batch([2, 3], 2))
    tl = _timeline_dir(root, version)
    for suffix in ("savepoint.inflight", "savepoint"):  # `savepoint create` of the latest commit
        name = f"{last}.{suffix}" if version < 8 or suffix.endswith("inflight") else f"{last}_{last}.{suffix}"
        (tl / name).write_bytes(b"")
    t = evt.HudiTable.open(root)
    before = _tree(tmp_path)
    with pytest.raises(RollbackError, match=f"savepoint {last}") as err:
        t.rollback(last)
    assert str(root) in str(err.value)
    assert _tree(tmp_path) == before
    assert sorted(t.read()["id"].to_pylist()) == [1, 2, 3]


STOCK_UNMERGEABLE = {
    "mor_table_partial_update": "partial-update blocks",
    "mor_table_partial_update_event_time": "partial-update blocks",
    "mor_table_hfile_log_block": "HFILE_DATA blocks",
}


def _stock_copy(tmp_path: Path, name: str) -> evt.HudiTable:
    root = tmp_path / name
    shutil.copytree(fixture_table_path(name), root, symlinks=True)
    t = evt.HudiTable.open(root)
    # The fixtures declare a metadata table they do not ship: disabled the way Hudi disables it.
    t.metadata_table.disable(dry_run=False)
    return evt.HudiTable.open(root)


@SKIP_NO_SHARED
@pytest.mark.parametrize("name", list(STOCK_UNMERGEABLE))
def test_a_plan_of_logs_the_run_does_not_merge_is_refused_when_scheduled(tmp_path: Path, name: str) -> None:
    t = _stock_copy(tmp_path, name)
    before = _tree(tmp_path)
    snapshot = t.read("read_optimized")
    for link_mode in ("copy", "symlink"):
        with pytest.raises(UnsupportedFeatureError) as err:
            t.compaction.schedule(UnBoundedCompactionStrategy(), link_mode=link_mode, link_timing="schedule")
        message = str(err.value)
        assert str(t.path) in message and STOCK_UNMERGEABLE[name] in message and ".log." in message, message
        assert _tree(tmp_path) == before
        assert t.compaction.pending() == []
    assert t.read("read_optimized").equals(snapshot)


@SKIP_NO_SHARED
def test_file_groups_of_a_pending_log_compaction_are_not_compacted(tmp_path: Path) -> None:
    t = _stock_copy(tmp_path, "mor_table_log_compaction")
    (lc,) = [i for i in t.timeline.instants if i.action == "deltacommit" and i.time == "20260409030522412"]
    (done,) = (Path(t.path) / ".hoodie" / "timeline").glob(f"{lc.time}_*.deltacommit")
    done.unlink()  # the log compaction is inflight (still running, or failed)
    t = evt.HudiTable.open(t.path)
    assert [i.time for i in t.timeline.pending_log_compactions()] == [lc.time]
    before = _tree(tmp_path)
    assert t.compaction.schedule(UnBoundedCompactionStrategy()) is None
    with pytest.raises(PendingTableServiceError, match=f"log compaction {lc.time}"):
        t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold="2026-01-01"))
    assert _tree(tmp_path) == before
    decision = should_compact("EVENT_TIME_TRIGGER", t.compaction.can_schedule("29990101000000000"))
    assert not decision.fire and f"log compaction {lc.time}" in decision.reason


@pytest.mark.parametrize("layout", ["consistent_hashing_metadata", "partition_bucket_index_meta"])
@pytest.mark.parametrize("version", [6, 9])
def test_a_write_refuses_a_bucket_layout_kept_in_the_timeline_folder(tmp_path: Path, layout: str, version: int) -> None:
    root = tmp_path / "t"
    t = evt.HudiTable.create(root, "features", "id", ordering_field="ts", buckets=1, table_version=version)
    t.write(_batch([1, 2], 1))
    meta = root / ".hoodie" / ".bucket_index" / layout
    meta.mkdir(parents=True)
    (meta / "00000000000000.hashing_meta").write_text("{}")  # what a stock writer of such an index keeps there
    t = evt.HudiTable.open(root)
    before = _tree(tmp_path)
    attempts = {"BUCKET": {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "1"}}
    if version >= 8:
        attempts["SIMPLE"] = {"hoodie.index.type": "SIMPLE"}
    for index, options in attempts.items():
        for operation in ("upsert", "delete"):
            with pytest.raises(UnsupportedTableError) as err:
                t.write(_batch([2, 3], 2), operation=operation, options=options)
            assert str(root) in str(err.value) and layout in str(err.value), (index, err.value)
            assert _tree(tmp_path) == before
    assert sorted(t.read()["id"].to_pylist()) == [1, 2]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hoodie.table.keygenerator.type", "TIMESTAMP"),
        ("hoodie.table.keygenerator.type", "CUSTOM"),
        ("hoodie.table.keygenerator.class", "org.apache.hudi.keygen.TimestampBasedKeyGenerator"),
    ],
)
def test_a_write_refuses_a_key_generator_it_does_not_reproduce(tmp_path: Path, key: str, value: str) -> None:
    root = tmp_path / "t"
    t = evt.HudiTable.create(root, "features", "id", ordering_field="ts", buckets=1, table_version=9)
    t.write(_batch([1, 2], 1))
    # One of the two names, as Hudi 0.x (class) or 1.x (type) records it; the class wins when both are set.
    _add_properties(root, "hoodie.table.keygenerator.class=\nhoodie.table.keygenerator.type=\n")
    _add_properties(root, f"{key}={value}\n")
    t = evt.HudiTable.open(root)
    before = _tree(tmp_path)
    with pytest.raises(UnsupportedTableError) as err:
        t.write(_batch([2, 3], 2))
    assert str(root) in str(err.value) and value in str(err.value)
    assert _tree(tmp_path) == before


@pytest.mark.spark
@pytest.mark.parametrize("feature", ["cdc", "bootstrap"])
def test_a_spark_dataframe_write_refuses_a_table_feature(spark: SparkSession, tmp_path: Path, feature: str) -> None:
    root = tmp_path / "t"
    t, _, failed = _built(root, 9)
    setting, mutate = FEATURES[feature]
    mutate(root, 9, failed)
    t = evt.HudiTable.open(root)
    before = _tree(tmp_path)
    df = spark.createDataFrame(_batch([6, 7], 4).to_pandas())
    for attempt in (lambda: t.write(df, spark=spark), lambda: write_dataframe(t, df)):
        with pytest.raises(UnsupportedTableError) as err:
            attempt()
        assert str(root) in str(err.value) and setting in str(err.value), err.value
        assert _tree(tmp_path) == before


@SKIP_NO_SHARED
def test_a_pending_clustering_holds_off_compactions_and_writes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = evt.HudiTable.create(root, "features", "id", ordering_field="ts", buckets=2, table_version=9)
    t.write(_batch([1, 2, 3, 4], 1))
    t.write(_batch([1, 2, 3, 4], 2))
    held = t.view.latest_file_slices()[0]
    # A stock clustering plan (decoded from a stock table's), re-aimed at one of this table's file groups.
    stock = fixture_table_path("mor_v9_txns_simple_nometa") / ".hoodie" / "timeline"
    req = decode_replace_requested((stock / "20260307135840454.clustering.requested").read_bytes(), "stock")
    group = dict(req["clusteringPlan"]["inputGroups"][0])
    group["slices"] = [
        {
            "dataFilePath": None,
            "deltaFilePaths": [lf.name for lf in held.log_files],
            "fileId": held.file_id,
            "partitionPath": held.partition_path,
            "bootstrapFilePath": "",
            "version": 1,
        }
    ]
    plan = {**req, "clusteringPlan": {**req["clusteringPlan"], "inputGroups": [group]}}
    clustering = "29990101000000000"
    (root / ".hoodie" / "timeline" / f"{clustering}.clustering.requested").write_bytes(
        encode_avro_container(plan, load_schema("HoodieRequestedReplaceMetadata"))
    )
    t = evt.HudiTable.open(root)
    assert held_by_other_table_services(t) == {(held.partition_path, held.file_id): clustering}
    before = _tree(tmp_path)
    for attempt in (
        lambda: t.compaction.schedule(UnBoundedCompactionStrategy()),
        lambda: t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold="2026-01-01")),
        lambda: t.write(_batch([5], 3)),
    ):
        with pytest.raises(PendingTableServiceError, match=clustering):
            attempt()
        assert _tree(tmp_path) == before


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_refuses_url_encoded_partition_paths(tmp_path: Path, version: int) -> None:
    """Hudi escapes such a table's partition values in its paths (``PartitionPathEncodeUtils``); written unescaped, a
    value with a space or a colon would name another folder than a stock writer's, and its key live twice."""
    root = tmp_path / "t"
    t = evt.HudiTable.create(
        root, "features", "id", partition_by="city", ordering_field="ts", buckets=1, table_version=version
    )
    batch = _batch([1, 2], 1).append_column("city", pa.array(["san francisco", "a:b"]))
    t.write(batch)
    _add_properties(root, "hoodie.datasource.write.partitionpath.urlencode=true\n")
    t = evt.HudiTable.open(root)
    before = _tree(tmp_path)
    options = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "1"}
    with pytest.raises(UnsupportedTableError) as err:
        t.write(batch, options=options)
    assert str(root) in str(err.value) and "URL-encoded" in str(err.value)
    assert _tree(tmp_path) == before


@pytest.mark.parametrize(
    ("version", "line"),
    [
        (6, "hoodie.compaction.payload.class=com.example.SummingPayload"),
        (8, "hoodie.compaction.payload.class=com.example.SummingPayload"),
        (8, "hoodie.record.merge.strategy.id=1897ef5f-18bc-4557-939c-9d6a8afd1519"),
    ],
)
def test_a_merge_of_the_tables_own_is_refused(tmp_path: Path, version: int, line: str) -> None:
    """Hudi infers the CUSTOM merge mode from a payload class or (version 8) a merge strategy id it does not know
    (``HoodieTableConfig.inferMergingConfigsForPreV9Table``); merged by the ordering field instead, a snapshot would
    answer otherwise than Hudi. Every operation that merges refuses; the read-optimized view reads."""
    root = tmp_path / "t"
    t = evt.HudiTable.create(root, "features", "id", ordering_field="ts", buckets=1, table_version=version)
    t.write(_batch([1, 2], 1))
    t.write(_batch([2, 3], 2))
    _add_properties(root, line + "\n")
    t = evt.HudiTable.open(root)
    before = _tree(tmp_path)
    for what, attempt in {
        "snapshot": lambda: t.read(),
        "write": lambda: t.write(_batch([4], 3)),
        "schedule": lambda: t.compaction.schedule(UnBoundedCompactionStrategy()),
    }.items():
        with pytest.raises(UnsupportedTableError) as err:
            attempt()
        assert str(root) in str(err.value) and line.split("=", 1)[1] in str(err.value), (what, err.value)
        assert _tree(tmp_path) == before
    assert t.read("read_optimized").num_rows == 0


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize(
    "options",
    [
        {"hoodie.index.type": "SIMPLE"},
        {"hoodie.bucket.index.num.buckets": "4"},
        {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "3"},
        {"hoodie.bucket.index.hash.field": "ts"},
    ],
    ids=["simple", "buckets", "bucket-3", "hash-field"],
)
def test_a_write_refuses_options_against_the_index_the_table_records(
    tmp_path: Path, version: int, options: dict[str, str]
) -> None:
    """A table that records its bucket index in ``hoodie.properties`` is written with that index: another index,
    bucket count or hash field in the options would put a key into another file group than its writers look in
    (and the key would live twice)."""
    root = tmp_path / "t"
    t = evt.HudiTable.create(root, "features", "id", ordering_field="ts", buckets=2, table_version=version)
    t.write(_batch([1, 2, 3, 4], 1))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())  # every file group gets a base file
    assert c is not None
    t.compaction.run(c.instant)
    before = _tree(tmp_path)
    with pytest.raises(UnsupportedTableError) as err:
        t.write(_batch([3, 4, 5, 6], 2), options=options)
    key = next(k for k in options if k != "hoodie.index.type" or len(options) == 1)  # the setting that differs
    assert str(root) in str(err.value) and key in str(err.value), err.value
    assert _tree(tmp_path) == before
    t.write(_batch([3, 4, 5, 6], 2), options={"hoodie.index.type": "BUCKET"})  # the table's own settings, named
    assert sorted(t.read()["id"].to_pylist()) == [1, 2, 3, 4, 5, 6]


def test_a_clean_of_a_savepointed_table_is_refused_before_it_touches_anything(tmp_path: Path) -> None:
    """Clean refuses a table with savepoints; it did so after it had deleted the links of abandoned schedules."""
    root = tmp_path / "t"
    t = evt.HudiTable.create(root, "features", "id", ordering_field="ts", buckets=1, table_version=6)
    t.write(_batch([1, 2], 1))
    last = t.write(_batch([2, 3], 2))
    # A schedule that died between its links and its plan, long ago: a recorded link of an instant no timeline knows.
    (log,) = t.view.latest_file_slices()[0].log_files[:1]
    dead = "20200101000000000"
    link = log.path.replace(log.instant, dead)
    record_ownership(t.storage, dead, SCHEDULE, "links", [OwnedFile(link, LINK)])
    shutil.copyfile(root / log.path, root / link)
    for p in [*(root / ".hoodie" / ".temp").rglob("*"), root / link]:
        os.utime(p, (1_000_000_000, 1_000_000_000))
    for suffix in ("savepoint.inflight", "savepoint"):
        (root / ".hoodie" / f"{last}.{suffix}").write_bytes(b"")
    t = evt.HudiTable.open(root)
    before = _tree(tmp_path)
    with pytest.raises(UnsupportedFeatureError, match="savepoints"):
        t.clean(dry_run=False)
    assert _tree(tmp_path) == before


@SKIP_NO_SHARED
@pytest.mark.parametrize("name", list(STOCK_UNMERGEABLE))
def test_a_stock_plan_of_logs_the_run_does_not_merge_is_refused_naming_the_table(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan stock Hudi scheduled (Hudi 1.1 compacts partial updates) over such logs: the run refuses it, naming the
    compaction and the table (the refusal came from deep in the readers, naming a file group or a log only), and
    unschedule takes it back."""
    t = _stock_copy(tmp_path, name)
    before = _tree(tmp_path)
    snapshot = t.read("read_optimized")
    # The plan as a stock scheduler writes it: this toolkit's schedule, without its own refusal.
    monkeypatch.setattr(schedule_module, "_refuse_unmergeable_blocks", lambda *args: None)
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    monkeypatch.undo()
    assert c is not None
    scheduled = _tree(tmp_path)
    with pytest.raises(UnsupportedFeatureError) as err:
        t.compaction.run(c.instant)
    assert _tree(tmp_path) == scheduled, "the refused run changed the table (the plan went inflight)"
    message = str(err.value)
    assert f"compaction {c.instant} of {t.path}" in message and STOCK_UNMERGEABLE[name].split()[0] in message, message
    assert t.compaction.unschedule(c.instant, dry_run=False).deleted
    assert {k: v for k, v in _tree(tmp_path).items() if ".hoodie/.temp" not in k} == before
    assert t.read("read_optimized").equals(snapshot)


@pytest.mark.parametrize("version", [6, 9])
def test_no_compaction_is_scheduled_while_a_rollback_is_pending(tmp_path: Path, version: int) -> None:
    """Hudi finishes pending rollbacks before it schedules a table service. A rollback stopped before it un-committed
    its target leaves the target committed: a compaction scheduled then took the target's records into its base
    files, and the rollback could never finish (a later instant now depended on its target)."""
    root = tmp_path / "t"
    t = evt.HudiTable.create(root, "features", "id", ordering_field="ts", buckets=1, table_version=version)
    t.write(_batch([1, 2], 1))
    last = t.write(_batch([2, 3], 2))
    assert_killed(run_child(root, "rollback.after_inflight", "rollback", last))
    t = evt.HudiTable.open(root)
    (pending,) = [i for i in t.timeline.instants if i.action == "rollback" and not i.is_completed]
    before = _tree(tmp_path)
    for strategy in (UnBoundedCompactionStrategy(), EventTimeBasedCompactionStrategy(threshold="2026-01-01")):
        with pytest.raises(PendingTableServiceError, match=f"rollback {pending.time}"):
            t.compaction.schedule(strategy)
        assert _tree(tmp_path) == before
    t.rollback(last)  # resumed
    assert t.compaction.schedule(UnBoundedCompactionStrategy()) is not None
    assert t.read().select(["id", "ts", "v"]).sort_by("id").to_pydict() == _batch([1, 2], 1).to_pydict()
