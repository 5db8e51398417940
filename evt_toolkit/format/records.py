"""Hudi's timeline metadata as typed, frozen records — the only place that knows its field names.

``HoodieCommitMetadata`` with its ``HoodieWriteStat`` s, ``HoodieCompactionPlan`` with its operations,
``HoodieCleanerPlan``/``HoodieCleanMetadata`` and ``HoodieRollbackPlan``/``HoodieRollbackMetadata`` are decoded by
:mod:`evt_toolkit.format.metadata` into Hudi's field names and wrapped here into records every other layer reads by
attribute (hudi-rs types them the same way in ``crates/core/src/metadata/``). Each record keeps the complete decoded
``record`` too, so that writing one back loses no field the toolkit does not model.

Example:
    >>> m = CommitMetadata.of([WriteStat.of("p", fileId="f-0", path="p/.f-0_1.log.1_0-0-0", numWrites=3)],
    ...                       operation_type="UPSERT")
    >>> [(s.partition_path, s.file_id, s.num_writes) for s in m.write_stats], m.file_groups()
    ([('p', 'f-0', 3)], {('p', 'f-0')})
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evt_toolkit.format.extra_metadata import COMPACTION_LINK_MODE, COMPACTION_LINK_TIMING
from evt_toolkit.format.links import COPY, Link, links_from_operation
from evt_toolkit.format.metadata import encode_avro_container, load_schema, write_stat

__all__ = [
    "CleanMetadata",
    "CleanPartition",
    "CleanPlan",
    "CommitMetadata",
    "CompactionOperation",
    "CompactionPlan",
    "RollbackMetadata",
    "RollbackPartition",
    "RollbackPlan",
    "RollbackPlanRequest",
    "WriteStat",
]


def _int(value: Any, default: int = 0) -> int:
    try:
        return default if value is None or value == "" else int(value)
    except (TypeError, ValueError):
        return default


def _opt_int(value: Any) -> int | None:
    try:
        return None if value is None or value == "" else int(value)
    except (TypeError, ValueError):
        return None


# -- commit metadata ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriteStat:
    """One ``HoodieWriteStat`` (or ``HoodieDeltaWriteStat``) of a commit: a file a commit wrote.

    Attributes:
        partition_path: the partition (the key it is listed under in the commit).
        file_id: ``fileId``.
        path: ``path``, relative to the base path (``""`` in a workload profile).
        prev_commit: ``prevCommit`` (``"null"`` for a new file group).
        num_writes, num_deletes, num_update_writes, num_inserts: record counts.
        total_write_bytes: bytes written by the commit into the file.
        file_size: ``fileSizeInBytes``.
        min_event_time, max_event_time: epoch ms when recorded.
        total_log_files_compacted: logs a compaction merged into this file.
        total_log_blocks: ``totalLogBlocks``.
        total_write_errors: ``totalWriteErrors``.
        record: every field as Hudi wrote it, in Jackson's order.
        log_offset: ``logOffset`` of a ``HoodieDeltaWriteStat`` (where the commit's first block starts in the log
            file; ``fileSizeInBytes`` bytes from there are the commit's), ``None`` for base files and when absent.
    """

    partition_path: str
    file_id: str
    path: str
    prev_commit: str | None
    num_writes: int
    num_deletes: int
    num_update_writes: int
    num_inserts: int
    total_write_bytes: int
    file_size: int
    min_event_time: int | None
    max_event_time: int | None
    total_log_files_compacted: int
    total_log_blocks: int
    total_write_errors: int
    record: Mapping[str, Any] = field(repr=False, compare=False)
    log_offset: int | None = None

    @property
    def file_name(self) -> str:
        """The bare file name of :attr:`path`."""
        return posixpath.basename(self.path) if self.path else ""

    @classmethod
    def from_record(cls, partition_path: str, rec: Mapping[str, Any]) -> WriteStat:
        """Wrap a decoded ``HoodieWriteStat`` listed under ``partition_path``."""
        return cls(
            partition_path=str(partition_path or ""),
            file_id=str(rec.get("fileId") or ""),
            path=str(rec.get("path") or ""),
            prev_commit=None if rec.get("prevCommit") is None else str(rec.get("prevCommit")),
            num_writes=_int(rec.get("numWrites")),
            num_deletes=_int(rec.get("numDeletes")),
            num_update_writes=_int(rec.get("numUpdateWrites")),
            num_inserts=_int(rec.get("numInserts")),
            total_write_bytes=_int(rec.get("totalWriteBytes")),
            file_size=_int(rec.get("fileSizeInBytes")),
            min_event_time=_opt_int(rec.get("minEventTime")),
            max_event_time=_opt_int(rec.get("maxEventTime")),
            total_log_files_compacted=_int(rec.get("totalLogFilesCompacted")),
            total_log_blocks=_int(rec.get("totalLogBlocks")),
            total_write_errors=_int(rec.get("totalWriteErrors")),
            record=dict(rec),
            log_offset=_opt_int(rec.get("logOffset")),
        )

    @classmethod
    def of(cls, partition_path: str, **fields: Any) -> WriteStat:
        """A new stat from Hudi's field names, with ``HoodieWriteStat``'s defaults for the rest (Jackson's order)."""
        return cls.from_record(partition_path, write_stat(partitionPath=partition_path, **fields))


@dataclass(frozen=True, slots=True)
class CommitMetadata:
    """``HoodieCommitMetadata`` (commit, deltacommit, replacecommit; completed or the inflight workload profile).

    Attributes:
        write_stats: every write stat, partition by partition in the commit's order.
        compacted: ``compacted`` (a compaction's commit).
        extra: ``extraMetadata``.
        operation_type: ``operationType``.
        replaced_file_ids: ``partitionToReplaceFileIds`` of a replacecommit (empty otherwise).
        record: every field as decoded, in Hudi's JSON shape.
    """

    write_stats: tuple[WriteStat, ...]
    compacted: bool
    extra: Mapping[str, str]
    operation_type: str
    replaced_file_ids: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> CommitMetadata:
        """Wrap commit metadata decoded by :func:`evt_toolkit.format.metadata.decode_commit_metadata`."""
        stats = tuple(
            WriteStat.from_record(str(p), s)
            for p, entries in (rec.get("partitionToWriteStats") or {}).items()
            for s in entries or []
        )
        replaced = {
            str(p): tuple(str(x) for x in ids or []) for p, ids in (rec.get("partitionToReplaceFileIds") or {}).items()
        }
        extra = {str(k): str(v) for k, v in (rec.get("extraMetadata") or {}).items() if v is not None}
        return cls(stats, bool(rec.get("compacted")), extra, str(rec.get("operationType") or "UNKNOWN"), replaced, rec)

    @classmethod
    def of(
        cls,
        write_stats: Iterable[WriteStat],
        *,
        compacted: bool = False,
        extra: Mapping[str, str] | None = None,
        operation_type: str = "UNKNOWN",
    ) -> CommitMetadata:
        """New metadata, partitions in sorted order as Hudi's writers list them."""
        stats = tuple(write_stats)
        meta = cls(stats, compacted, dict(extra or {}), operation_type, {}, {})
        return cls(stats, compacted, dict(extra or {}), operation_type, {}, meta.to_record())

    def to_record(self) -> dict[str, Any]:
        """The metadata in Hudi's JSON shape (what the encoders take)."""
        by_partition: dict[str, list[dict[str, Any]]] = {}
        for s in self.write_stats:
            by_partition.setdefault(s.partition_path, []).append(dict(s.record))
        out: dict[str, Any] = {
            "partitionToWriteStats": {p: by_partition[p] for p in sorted(by_partition)},
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra),
            "operationType": self.operation_type,
        }
        if self.replaced_file_ids:
            out["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in self.replaced_file_ids.items()}
        return out

    def file_groups(self) -> set[tuple[str, str]]:
        """``(partition, file id)`` of every file group the commit wrote."""
        return {(s.partition_path, s.file_id) for s in self.write_stats if s.file_id}

    def paths(self) -> list[str]:
        """Every file the commit's stats name (relative paths)."""
        return [s.path for s in self.write_stats if s.path]


# -- compaction plans --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactionOperation:
    """One ``HoodieCompactionOperation``: a file slice to compact, with the RFC's ``symlinkOperations``.

    Attributes:
        partition_path: ``partitionPath``.
        file_id: ``fileId``.
        base_instant: ``baseInstantTime`` (the slice being compacted).
        delta_files: ``deltaFilePaths``: bare names of the compacted logs, replay order.
        data_file: ``dataFilePath``: the slice's base file name, or ``None``.
        metrics: ``metrics`` (``TOTAL_LOG_FILES``, ``TOTAL_IO_MB``, ...).
        links: the leftover logs carried into the new slice (``symlinkOperations``).
        record: every field as decoded.
    """

    partition_path: str
    file_id: str
    base_instant: str
    delta_files: tuple[str, ...]
    data_file: str | None
    metrics: Mapping[str, float]
    links: tuple[Link, ...]
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_record(
        cls, rec: Mapping[str, Any], instant: str = "", mode: str = COPY, timing: str = "schedule"
    ) -> CompactionOperation:
        """Wrap a decoded operation of the plan at ``instant`` (its links get the plan's mode and timing)."""
        return cls(
            partition_path=str(rec.get("partitionPath") or ""),
            file_id=str(rec.get("fileId") or ""),
            base_instant=str(rec.get("baseInstantTime") or ""),
            delta_files=tuple(str(d) for d in rec.get("deltaFilePaths") or []),
            data_file=None if not rec.get("dataFilePath") else str(rec.get("dataFilePath")),
            metrics={str(k): float(v) for k, v in (rec.get("metrics") or {}).items() if v is not None},
            links=tuple(links_from_operation(rec, instant, mode, timing)),
            record=dict(rec),
        )

    def to_record(self) -> dict[str, Any]:
        """The Avro record (``HoodieCompactionOperation`` with ``symlinkOperations``)."""
        out = dict(self.record)
        out.update(
            {
                "baseInstantTime": self.base_instant,
                "deltaFilePaths": list(self.delta_files),
                "dataFilePath": self.data_file,
                "fileId": self.file_id,
                "partitionPath": self.partition_path,
                "metrics": dict(self.metrics),
                "bootstrapFilePath": out.get("bootstrapFilePath"),
                "symlinkOperations": [link.to_avro() for link in self.links] if self.links else None,
            }
        )
        return out


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """A ``HoodieCompactionPlan``.

    Attributes:
        operations: the operations, in plan order.
        extra: ``extraMetadata``.
        version: the plan version (2 after migration).
        record: every field as decoded.
    """

    operations: tuple[CompactionOperation, ...]
    extra: Mapping[str, str]
    version: int = 2
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_record(cls, rec: Mapping[str, Any], instant: str = "") -> CompactionPlan:
        """Wrap a plan decoded by :func:`evt_toolkit.format.metadata.decode_compaction_plan`."""
        extra = {str(k): str(v) for k, v in (rec.get("extraMetadata") or {}).items() if v is not None}
        mode = extra.get(COMPACTION_LINK_MODE, COPY)
        timing = extra.get(COMPACTION_LINK_TIMING, "schedule")
        ops = tuple(CompactionOperation.from_record(op, instant, mode, timing) for op in rec.get("operations") or [])
        return cls(ops, extra, _int(rec.get("version"), 2), dict(rec))

    def to_record(self) -> dict[str, Any]:
        """The Avro record (``HoodieCompactionPlan``, extended schema)."""
        out = dict(self.record)
        out.update(
            {
                "operations": [op.to_record() for op in self.operations],
                "extraMetadata": dict(self.extra),
                "version": self.version,
            }
        )
        out.setdefault("strategy", None)
        out.setdefault("preserveHoodieMetadata", False)
        return out

    @property
    def links(self) -> tuple[Link, ...]:
        """Every link of the plan, in plan order."""
        return tuple(link for op in self.operations for link in op.links)

    def operation(self, partition_path: str, file_id: str) -> CompactionOperation | None:
        """The operation of one file group, if the plan has one."""
        return next(
            (op for op in self.operations if (op.partition_path, op.file_id) == (partition_path, file_id)), None
        )


# -- clean -----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CleanPlan:
    """A ``HoodieCleanerPlan``.

    Attributes:
        policy: ``policy``.
        earliest_instant_to_retain: ``earliestInstantToRetain.timestamp`` (``None`` when absent).
        last_completed_commit: ``lastCompletedCommitTimestamp``.
        files: partition → full paths (``filePathsToBeDeletedPerPartition``).
        record: every field as decoded.
    """

    policy: str
    earliest_instant_to_retain: str | None
    last_completed_commit: str
    files: Mapping[str, tuple[str, ...]]
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> CleanPlan:
        """Wrap a decoded plan."""
        ectr = rec.get("earliestInstantToRetain") or {}
        files = {
            str(p): tuple(str(x.get("filePath")) for x in infos or [] if x.get("filePath"))
            for p, infos in (rec.get("filePathsToBeDeletedPerPartition") or {}).items()
        }
        return cls(
            str(rec.get("policy") or ""),
            str(ectr.get("timestamp")) if ectr.get("timestamp") else None,
            str(rec.get("lastCompletedCommitTimestamp") or ""),
            files,
            dict(rec),
        )

    @classmethod
    def of(
        cls,
        *,
        policy: str,
        earliest_instant_to_retain: tuple[str, str] | None,
        last_completed_commit: str,
        files: Mapping[str, Iterable[str]],
        version: int,
    ) -> CleanPlan:
        """A new plan (version 2: full paths per partition; the legacy field left empty, as ``CleanPlanner``)."""
        rec: dict[str, Any] = {
            "earliestInstantToRetain": (
                {
                    "timestamp": earliest_instant_to_retain[0],
                    "action": earliest_instant_to_retain[1],
                    "state": "COMPLETED",
                }
                if earliest_instant_to_retain is not None
                else None
            ),
            "lastCompletedCommitTimestamp": last_completed_commit,
            "policy": policy,
            "filesToBeDeletedPerPartition": {},
            "version": version,
            "filePathsToBeDeletedPerPartition": {
                p: [{"filePath": f, "isBootstrapBaseFile": False} for f in paths] for p, paths in files.items()
            },
            "partitionsToBeDeleted": [],
        }
        return cls.from_record(rec)

    def encode(self) -> bytes:
        """The single-record Avro container Hudi writes for it (``HoodieCleanerPlan``)."""
        return encode_avro_container(self.to_record(), load_schema("HoodieCleanerPlan"))

    def to_record(self) -> dict[str, Any]:
        """The Avro record (``HoodieCleanerPlan``)."""
        return dict(self.record)


@dataclass(frozen=True, slots=True)
class CleanPartition:
    """One partition of ``HoodieCleanMetadata``: file names planned, deleted and failed, and the policy."""

    planned: tuple[str, ...]
    deleted: tuple[str, ...]
    failed: tuple[str, ...]
    policy: str = ""


@dataclass(frozen=True, slots=True)
class CleanMetadata:
    """``HoodieCleanMetadata`` of a completed clean.

    Attributes:
        earliest_commit_to_retain: ``earliestCommitToRetain`` (``""`` for file-version cleans).
        partitions: per partition, the file names planned, deleted and failed.
        total_files_deleted: ``totalFilesDeleted``.
        time_taken_ms: ``timeTakenInMillis``.
        record: every field as decoded.
    """

    earliest_commit_to_retain: str
    partitions: Mapping[str, CleanPartition]
    total_files_deleted: int = 0
    time_taken_ms: int = 0
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> CleanMetadata:
        """Wrap decoded metadata."""
        parts = {
            str(p): CleanPartition(
                tuple(str(x) for x in pm.get("deletePathPatterns") or []),
                tuple(str(x) for x in pm.get("successDeleteFiles") or []),
                tuple(str(x) for x in pm.get("failedDeleteFiles") or []),
                str(pm.get("policy") or ""),
            )
            for p, pm in (rec.get("partitionMetadata") or {}).items()
        }
        return cls(
            str(rec.get("earliestCommitToRetain") or ""),
            parts,
            _int(rec.get("totalFilesDeleted")),
            _int(rec.get("timeTakenInMillis")),
            dict(rec),
        )

    @classmethod
    def of(
        cls,
        *,
        start_clean_time: str,
        elapsed_ms: int,
        policy: str,
        earliest_commit_to_retain: str,
        last_completed_commit: str,
        partitions: Mapping[str, CleanPartition],
        version: int,
    ) -> CleanMetadata:
        """New metadata (``CleanerUtils.convertCleanMetadata``: file names, not paths, per partition)."""
        rec = {
            "startCleanTime": start_clean_time,
            "timeTakenInMillis": elapsed_ms,
            "totalFilesDeleted": sum(len(p.deleted) for p in partitions.values()),
            "earliestCommitToRetain": earliest_commit_to_retain,
            "lastCompletedCommitTimestamp": last_completed_commit,
            "partitionMetadata": {
                p: {
                    "partitionPath": p,
                    "policy": pm.policy or policy,
                    "deletePathPatterns": list(pm.planned),
                    "successDeleteFiles": list(pm.deleted),
                    "failedDeleteFiles": list(pm.failed),
                    "isPartitionDeleted": False,
                }
                for p, pm in sorted(partitions.items())
            },
            "version": version,
            "bootstrapPartitionMetadata": {},
        }
        return cls.from_record(rec)

    def encode(self) -> bytes:
        """The single-record Avro container Hudi writes for it (``HoodieCleanMetadata``)."""
        return encode_avro_container(self.to_record(), load_schema("HoodieCleanMetadata"))

    def to_record(self) -> dict[str, Any]:
        """The Avro record (``HoodieCleanMetadata``)."""
        return dict(self.record)

    def planned_names(self) -> dict[str, tuple[str, ...]]:
        """Per partition, every file name the clean planned, deleted or failed to delete."""
        return {p: (*pm.planned, *pm.deleted, *pm.failed) for p, pm in self.partitions.items()}


# -- rollback ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RollbackPlanRequest:
    """One ``HoodieRollbackRequest``: files to delete, or logs whose blocks a command block removes (full paths).

    Attributes:
        partition_path: ``partitionPath``.
        file_id: ``fileId`` (empty for plain deletions, as ``MarkerBasedRollbackStrategy`` writes them).
        latest_base_instant: ``latestBaseInstant`` (likewise).
        files_to_delete: ``filesToBeDeleted``.
        log_blocks_to_delete: ``logBlocksToBeDeleted``: log path → size.
    """

    partition_path: str
    file_id: str
    latest_base_instant: str
    files_to_delete: tuple[str, ...]
    log_blocks_to_delete: Mapping[str, int]

    def to_record(self) -> dict[str, Any]:
        """The Avro record."""
        return {
            "partitionPath": self.partition_path,
            "fileId": self.file_id,
            "latestBaseInstant": self.latest_base_instant,
            "filesToBeDeleted": list(self.files_to_delete),
            "logBlocksToBeDeleted": dict(self.log_blocks_to_delete),
        }


@dataclass(frozen=True, slots=True)
class RollbackPlan:
    """A ``HoodieRollbackPlan``: the instant to undo and its requests.

    Attributes:
        target: ``instantToRollback.commitTime``.
        action: ``instantToRollback.action``.
        requests: ``RollbackRequests``.
        version: the plan version.
    """

    target: str
    action: str
    requests: tuple[RollbackPlanRequest, ...]
    version: int = 1

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> RollbackPlan:
        """Wrap a decoded plan."""
        info = rec.get("instantToRollback") or {}
        requests = tuple(
            RollbackPlanRequest(
                str(r.get("partitionPath") or ""),
                str(r.get("fileId") or ""),
                str(r.get("latestBaseInstant") or ""),
                tuple(str(x) for x in r.get("filesToBeDeleted") or []),
                {str(k): _int(v) for k, v in (r.get("logBlocksToBeDeleted") or {}).items()},
            )
            for r in rec.get("RollbackRequests") or []
        )
        return cls(
            str(info.get("commitTime") or ""), str(info.get("action") or ""), requests, _int(rec.get("version"), 1)
        )

    def encode(self) -> bytes:
        """The single-record Avro container Hudi writes for it (``HoodieRollbackPlan``)."""
        return encode_avro_container(self.to_record(), load_schema("HoodieRollbackPlan"))

    def to_record(self) -> dict[str, Any]:
        """The Avro record."""
        return {
            "instantToRollback": {"commitTime": self.target, "action": self.action},
            "RollbackRequests": [r.to_record() for r in self.requests],
            "version": self.version,
        }


@dataclass(frozen=True, slots=True)
class RollbackPartition:
    """One partition of ``HoodieRollbackMetadata`` (full paths)."""

    deleted: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    rollback_log_files: Mapping[str, int] = field(default_factory=dict)
    logs_from_failed_commit: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RollbackMetadata:
    """``HoodieRollbackMetadata`` of a completed rollback."""

    rollback_instant: str
    target: str
    action: str
    elapsed_ms: int
    partitions: Mapping[str, RollbackPartition]
    version: int = 1

    def encode(self) -> bytes:
        """The single-record Avro container Hudi writes for it (``HoodieRollbackMetadata``)."""
        return encode_avro_container(self.to_record(), load_schema("HoodieRollbackMetadata"))

    def to_record(self) -> dict[str, Any]:
        """The Avro record."""
        return {
            "startRollbackTime": self.rollback_instant,
            "timeTakenInMillis": self.elapsed_ms,
            "totalFilesDeleted": sum(len(p.deleted) for p in self.partitions.values()),
            "commitsRollback": [self.target],
            "partitionMetadata": {
                p: {
                    "partitionPath": p,
                    "successDeleteFiles": list(pm.deleted),
                    "failedDeleteFiles": list(pm.failed),
                    "rollbackLogFiles": dict(pm.rollback_log_files),
                    "logFilesFromFailedCommit": dict(pm.logs_from_failed_commit),
                }
                for p, pm in sorted(self.partitions.items())
            },
            "version": self.version,
            "instantsRollback": [{"commitTime": self.target, "action": self.action}],
        }
