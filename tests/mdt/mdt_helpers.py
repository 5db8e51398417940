"""Synthetic data-table changes on copies of stock v8/v9 tables with a metadata table, and the readers that judge them.

A change is made the way a writer makes it — data files first, then the metadata table (through
``sync_files_partition``), then the data instant's completed file — with real bytes: a Parquet base file of a new
file group (rows copied from the table with new keys), an Avro log block of updates in an existing group, the
deletion of old slices under a clean instant. The judges are hudi-rs through the metadata table, hudi-rs on a copy
without it (storage listing), our reader (storage listing) and our reader of the metadata table.
"""

from __future__ import annotations

import json
import posixpath
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import evt_toolkit as evt
from evt_toolkit.format.log_writer import encode_avro_data_block, with_meta_fields
from evt_toolkit.format.metadata import encode_avro_container, load_schema, read_avro_container
from evt_toolkit.format.names import InstantFileName
from evt_toolkit.table.fs_view import list_table_files
from evt_toolkit.table.metadata_table import read_files_partition
from evt_toolkit.table.table import Table
from evt_toolkit.write.instants import new_instant_time
from evt_toolkit.write.metadata_sync import sync_files_partition
from tests.conftest import fixture_table_path

hudi: Any = None
try:  # hudi-rs is a test dependency; the tests that need it skip without it
    import hudi as _hudi

    hudi = _hudi
except ImportError:  # pragma: no cover
    pass


def copy_fixture(name: str, dst_root: Path) -> Path:
    dst = dst_root / name
    shutil.copytree(fixture_table_path(name), dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# -- judges -------------------------------------------------------------------------------------------------------


def rs_slices(path: Path) -> set[tuple[str, str]]:
    """(partition, file name) of every base and log file of hudi-rs's latest file slices."""
    t = hudi.HudiTableBuilder.from_base_uri(str(path.resolve())).build()
    out: set[tuple[str, str]] = set()
    for fs in t.get_file_slices():
        if fs.base_file_name:
            out.add((fs.partition_path, fs.base_file_name))
        out.update((fs.partition_path, name) for name in fs.log_file_names)
    return out


def rs_read(path: Path, as_of: str | None = None) -> pa.Table:
    t = hudi.HudiTableBuilder.from_base_uri(str(path.resolve())).build()
    opts = hudi.HudiReadOptions()
    if as_of is not None:
        opts = opts.with_as_of_timestamp(as_of)
    return pa.Table.from_batches(t.read(opts))


def without_mdt(path: Path, dst: Path) -> Path:
    """A copy of the table without ``.hoodie/metadata``: hudi-rs falls back to listing storage."""
    shutil.copytree(path, dst, ignore=lambda d, names: ["metadata"] if d.endswith(".hoodie") else [])
    return dst


def our_latest_slices(path: Path) -> set[tuple[str, str]]:
    t = Table.open(path)
    out: set[tuple[str, str]] = set()
    for s in t.view.latest_file_slices():
        if s.base_file is not None:
            out.add((s.partition_path, s.base_file.name))
        out.update((s.partition_path, lf.name) for lf in s.log_files)
    return out


def committed_files(path: Path) -> dict[tuple[str, str], int]:
    """Every data file on storage whose instant completed (all slices): what the files partition must list."""
    t = Table.open(path)
    listing = list_table_files(t.storage)
    out: dict[tuple[str, str], int] = {}
    for b in listing.base_files:
        if t.timeline.is_visible(b.instant):
            out[(posixpath.dirname(b.path), b.name)] = b.size
    for partition, lf in listing.log_files:
        if t.timeline.is_visible(lf.instant):
            out[(partition, lf.name)] = lf.size
    return out


def mdt_files(path: Path) -> dict[tuple[str, str], int]:
    listing = read_files_partition(Table.open(path))
    return {(p, name): size for p, files in listing.files.items() for name, size in files.items()}


def ours_read(path: Path, as_of: str | None = None) -> pa.Table:
    t = evt.HudiTable.open(path)
    return t.read(as_of=as_of) if as_of else t.read()


# -- writing a synthetic instant -----------------------------------------------------------------------------------


def _stat_fields() -> list[str]:
    schema = json.loads(load_schema("HoodieCommitMetadata"))
    stats_map = next(f for f in schema["fields"] if f["name"] == "partitionToWriteStats")["type"][1]
    return [f["name"] for f in stats_map["values"]["items"]["fields"]]


def _commit(stats: dict[str, list[dict[str, Any]]], extra: dict[str, str], operation: str) -> bytes:
    fields = _stat_fields()
    full = {p: [{**dict.fromkeys(fields), **s} for s in ss] for p, ss in stats.items()}
    record = {
        "partitionToWriteStats": full,
        "compacted": False,
        "extraMetadata": extra,
        "version": None,
        "operationType": operation,
    }
    return encode_avro_container(record, load_schema("HoodieCommitMetadata"))


def _latest_schema(t: Table) -> str:
    for inst in reversed(t.timeline.completed_commits()):
        data = t.storage.read_bytes(inst.file_name)
        extra = read_avro_container(data, inst.file_name).get("extraMetadata") or {}
        if extra.get("schema"):
            return str(extra["schema"])
    raise AssertionError("no schema in the table's commits")


def _times(t: Table) -> list[str]:
    out = [i.time for i in t.timeline.instants] + [i.completion_time for i in t.timeline.instants if i.completion_time]
    mdt_timeline = (
        t.storage.list_files(".hoodie/metadata/.hoodie/timeline")
        if t.storage.exists(".hoodie/metadata/.hoodie/timeline")
        else []
    )
    for e in mdt_timeline:
        parsed = InstantFileName.parse(e.name)
        if parsed is not None:
            out.append(parsed.requested_time)
            if parsed.completion_time:
                out.append(parsed.completion_time)
    return out


@dataclass
class Change:
    """One synthetic deltacommit: its instant, files per partition (name → size), rows it inserted or updated."""

    instant: str
    added: dict[str, dict[str, int]] = field(default_factory=dict)
    inserted_keys: list[str] = field(default_factory=list)
    updated_keys: list[str] = field(default_factory=list)
    stats: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)


def start_deltacommit(path: Path) -> tuple[Table, Change]:
    t = Table.open(path)
    instant = new_instant_time(_times(t), "LOCAL")
    timeline = t.config.timeline_path
    t.storage.put_if_absent(posixpath.join(timeline, f"{instant}.deltacommit.requested"), b"")
    t.storage.put_if_absent(posixpath.join(timeline, f"{instant}.deltacommit.inflight"), _commit({}, {}, "UPSERT"))
    return t, Change(instant, extra={"schema": _latest_schema(t)})


def add_base_file(t: Table, change: Change, n: int = 3) -> str:
    """A new file group: a Parquet base file holding ``n`` rows of the table's first base file, with new keys."""
    key = t.config.record_key_fields[0]
    src = next(s.base_file for s in t.view.latest_file_slices() if s.base_file is not None)
    assert src is not None
    partition = posixpath.dirname(src.path)
    rows = pq.read_table(t.storage.full_path(src.path)).slice(0, n)
    n = rows.num_rows
    fid = f"5e5e5e5e-0000-4000-8000-{len(change.added):012d}-0"
    name = f"{fid}_0-0-0_{change.instant}.parquet"
    keys = pc.binary_join_element_wise(pa.scalar("syn-"), rows[key].cast(pa.string()), "")
    cols: dict[str, Any] = {
        "_hoodie_commit_time": pa.array([change.instant] * n),
        "_hoodie_commit_seqno": pa.array([f"{change.instant}_0_{i}" for i in range(n)]),
        "_hoodie_record_key": keys,
        "_hoodie_file_name": pa.array([name] * n),
        key: keys,
    }
    for c, values in cols.items():
        rows = rows.set_column(rows.column_names.index(c), c, values)
    rel = posixpath.join(partition, name)
    pq.write_table(rows, t.storage.full_path(rel))
    size = t.storage.size(rel)
    change.added.setdefault(partition, {})[name] = size
    change.inserted_keys += keys.to_pylist()
    change.stats.setdefault(partition, []).append(
        {
            "fileId": fid,
            "path": rel,
            "prevCommit": "null",
            "numWrites": n,
            "numInserts": n,
            "partitionPath": partition,
            "totalWriteBytes": size,
            "fileSizeInBytes": size,
        }
    )
    return rel


def add_log_file(t: Table, change: Change, n: int = 2) -> str:
    """A v8+ log file of ``change`` in the last file group with a base file: ``n`` of its rows updated (ordering
    value raised, so both merge modes take them)."""
    cfg = t.config
    key = cfg.record_key_fields[0]
    s = [s for s in t.view.latest_file_slices() if s.base_file is not None][-1]
    assert s.base_file is not None
    partition = s.partition_path
    rows = pq.read_table(t.storage.full_path(s.base_file.path)).slice(0, n)
    n = rows.num_rows
    if cfg.ordering_field:
        col = rows[cfg.ordering_field]
        rows = rows.set_column(
            rows.column_names.index(cfg.ordering_field), cfg.ordering_field, pc.add(col, pa.scalar(10**6, col.type))
        )
    rows = rows.set_column(
        rows.column_names.index("_hoodie_commit_time"), "_hoodie_commit_time", pa.array([change.instant] * n)
    )
    schema = with_meta_fields(json.loads(change.extra["schema"]))
    block = encode_avro_data_block(rows, schema, change.instant)
    name = f".{s.file_id}_{change.instant}.log.1_0-0-0"
    rel = posixpath.join(partition, name)
    t.storage.put_if_absent(rel, block)
    change.added.setdefault(partition, {})[name] = len(block)
    change.updated_keys += rows[key].cast(pa.string()).to_pylist()
    change.stats.setdefault(partition, []).append(
        {
            "fileId": s.file_id,
            "path": rel,
            "prevCommit": change.instant,
            "numWrites": n,
            "numUpdateWrites": n,
            "partitionPath": partition,
            "totalWriteBytes": len(block),
            "fileSizeInBytes": len(block),
            "logVersion": 1,
            "baseFile": "",
            "logFiles": [name],
        }
    )
    return rel


def complete(t: Table, change: Change) -> str:
    completion = new_instant_time(_times(Table.open(t.storage.uri)), "LOCAL")
    name = InstantFileName(change.instant, "deltacommit", "COMPLETED", completion).name
    t.storage.put_if_absent(posixpath.join(t.config.timeline_path, name), _commit(change.stats, change.extra, "UPSERT"))
    return completion


def deltacommit(path: Path, *, base: bool = True, log: bool = True, sync: bool = True) -> Change:
    """Write a whole synthetic deltacommit: files, then (``sync``) the metadata table, then the completed file."""
    t, change = start_deltacommit(path)
    if base:
        add_base_file(t, change)
    if log:
        add_log_file(t, change)
    if sync:
        sync_files_partition(t, change.instant, added=change.added)
    complete(t, change)
    return change


def clean_old_slices(path: Path, *, sync: bool = True) -> tuple[str, dict[str, list[str]]]:
    """A KEEP_LATEST_FILE_VERSIONS(1) clean: every committed file outside the latest slices (older slices, replaced
    file groups) deleted under a clean instant."""
    t = Table.open(path)
    # Every committed file outside the latest slices: older slices and replaced file groups.
    keep = our_latest_slices(path)
    doomed: dict[str, list[str]] = {}
    for partition, name in sorted(set(committed_files(path)) - keep):
        doomed.setdefault(partition, []).append(name)
    assert doomed, "the fixture has no old slice to clean"
    instant = new_instant_time(_times(t), "LOCAL")
    timeline = t.config.timeline_path
    plan = {
        "earliestInstantToRetain": None,
        "lastCompletedCommitTimestamp": t.timeline.completed_commits()[-1].time,
        "policy": "KEEP_LATEST_FILE_VERSIONS",
        "filesToBeDeletedPerPartition": None,
        "version": 2,
        "filePathsToBeDeletedPerPartition": {
            p: [{"filePath": t.storage.full_path(posixpath.join(p, n)), "isBootstrapBaseFile": False} for n in names]
            for p, names in doomed.items()
        },
        "partitionsToBeDeleted": [],
    }
    t.storage.put_if_absent(
        posixpath.join(timeline, f"{instant}.clean.requested"),
        encode_avro_container(plan, load_schema("HoodieCleanerPlan")),
    )
    t.storage.put_if_absent(
        posixpath.join(timeline, f"{instant}.clean.inflight"),
        encode_avro_container(plan, load_schema("HoodieCleanerPlan")),
    )
    for p, names in doomed.items():
        for n in names:
            t.storage.delete_file(posixpath.join(p, n))
    if sync:
        sync_files_partition(t, instant, deleted=doomed)
    meta = {
        "startCleanTime": instant,
        "timeTakenInMillis": 1,
        "totalFilesDeleted": sum(len(v) for v in doomed.values()),
        "earliestCommitToRetain": "",
        "lastCompletedCommitTimestamp": plan["lastCompletedCommitTimestamp"],
        "partitionMetadata": {
            p: {
                "partitionPath": p,
                "policy": "KEEP_LATEST_FILE_VERSIONS",
                "deletePathPatterns": names,
                "successDeleteFiles": names,
                "failedDeleteFiles": [],
                "isPartitionDeleted": False,
            }
            for p, names in doomed.items()
        },
        "version": 2,
        "bootstrapPartitionMetadata": None,
    }
    completion = new_instant_time(_times(Table.open(path)), "LOCAL")
    t.storage.put_if_absent(
        posixpath.join(timeline, InstantFileName(instant, "clean", "COMPLETED", completion).name),
        encode_avro_container(meta, load_schema("HoodieCleanMetadata")),
    )
    return instant, doomed
