"""Deciding what a rollback undoes. Pure, no I/O.

Mirrors Hudi 0.14/0.15's ``BaseRollbackPlanActionExecutor`` with ``MarkerBasedRollbackStrategy`` (and its listing
fallback) on a v6 Merge-On-Read table (``hudi-format.md`` §5, §6, §10):

* **A failed deltacommit.** Each log file that holds blocks of the failed instant is looked at:

  - only the failed instant wrote into it, and the instant recorded the file before writing it (every deltacommit of
    this toolkit records and writes new files; a new file group is all the failed instant's): the file is deleted;
  - other instants wrote into it too (storage with append, such as HDFS, where writers share a log): it stays, and
    the rollback writes a ``COMMAND_BLOCK`` (``ROLLBACK_BLOCK``, ``TARGET_INSTANT_TIME`` = the failed instant)
    into a *new* log version of that slice with token ``1-0-1`` (``HoodieLogFormatWriter`` rolls over on storage
    without append; rollback writers pass ``UNKNOWN_WRITE_TOKEN``). Readers then drop the failed blocks queued
    before it (``AbstractHoodieLogRecordReader``).

  Base files named with the failed instant are deleted.
* **An inflight compaction ``C``.** Its outputs go: the base files ``{fileId}_{token}_{C}.parquet``, the carry-over
  logs its tasks wrote, and the links it created when it ran (``link_timing="execute"``). Links created at schedule
  time stay, since the plan, back to requested, still needs them (``unschedule`` removes those).

Requests follow ``HoodieRollbackRequest``: a request either deletes files or asks for a command block
(``logBlocksToBeDeleted``), never both, as ``BaseRollbackHelper.maybeDeleteAndCollectStats`` handles one or the other.

Example:
    >>> log = LogFacts("p", "p/.f_1.log.2_0-0-0", "f", "1", 2, 10, ("5",))
    >>> [r.files_to_delete for r in plan_deltacommit_rollback("5", [log], [])]
    [('p/.f_1.log.2_0-0-0',)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from evt_toolkit.errors import RollbackError
from evt_toolkit.format.names import UNKNOWN_WRITE_TOKEN, LogFileName
from evt_toolkit.format.records import CompactionOperation

__all__ = [
    "BaseFacts",
    "LogFacts",
    "RollbackError",
    "RollbackRequest",
    "command_log_name",
    "plan_compaction_rollback",
    "plan_deltacommit_rollback",
]


@dataclass(frozen=True, slots=True)
class LogFacts:
    """A log file that may hold blocks of the instant being rolled back.

    Attributes:
        partition_path: its partition.
        path: relative to the table base path.
        file_id: its file group.
        base_instant: the base instant in its name (its slice, on table v6).
        version: its log version.
        size: bytes on storage.
        block_instants: ``INSTANT_TIME`` of every block, in file order (for command blocks: the rollback that
            wrote them). Corrupt blocks have no instant and are left out.
        corrupt_blocks: blocks the reader classified as corrupt (torn writes).
        deletable: the instant being rolled back recorded this file before writing it (or created its whole file
            group), so the file may be deleted when all its blocks are that instant's; otherwise it only ever gets a
            rollback command block.
    """

    partition_path: str
    path: str
    file_id: str
    base_instant: str
    version: int
    size: int
    block_instants: tuple[str, ...]
    corrupt_blocks: int = 0
    deletable: bool = True

    def holds(self, instant: str) -> bool:
        """Whether a block of ``instant`` is in the file."""
        return instant in self.block_instants

    def only(self, instant: str) -> bool:
        """Whether every readable block of the file is ``instant``'s (torn blocks belong to nobody)."""
        return all(t == instant for t in self.block_instants)


@dataclass(frozen=True, slots=True)
class BaseFacts:
    """A base file that may have been written by the instant being rolled back."""

    partition_path: str
    path: str
    file_id: str
    instant: str


@dataclass(frozen=True, slots=True)
class RollbackRequest:
    """One ``HoodieRollbackRequest``.

    Attributes:
        partition_path: the partition.
        file_id: the file group.
        latest_base_instant: the base instant of the slice concerned.
        files_to_delete: relative paths to delete (empty for a command-block request).
        log_blocks_to_delete: for a command-block request, ``log path -> size`` of the logs holding the target's
            blocks (Hudi records the slice's latest log there); empty otherwise.
    """

    partition_path: str
    file_id: str
    latest_base_instant: str
    files_to_delete: tuple[str, ...] = ()
    log_blocks_to_delete: tuple[tuple[str, int], ...] = ()

    @property
    def needs_command_block(self) -> bool:
        """Whether this request appends a rollback command block instead of deleting."""
        return bool(self.log_blocks_to_delete)


def command_log_name(file_id: str, base_instant: str, existing_versions: Iterable[int]) -> str:
    """Name of the new log a rollback command block goes into: one version past every existing one, token ``1-0-1``.

    Example:
        >>> command_log_name("f-0", "20250101000000000", [1, 2])
        '.f-0_20250101000000000.log.3_1-0-1'
    """
    version = max(existing_versions, default=0) + 1
    return LogFileName(file_id, base_instant, "log", version, UNKNOWN_WRITE_TOKEN).name


def plan_deltacommit_rollback(
    target: str, logs: Sequence[LogFacts], base_files: Sequence[BaseFacts]
) -> list[RollbackRequest]:
    """The requests that undo deltacommit ``target``.

    Args:
        target: the instant being rolled back.
        logs: candidate log files (from markers, the inflight workload profile, write stats or listing); those
            without a block of ``target`` are ignored.
        base_files: candidate base files; those named with ``target`` are deleted.

    Returns:
        Delete requests first, then command-block requests, each sorted by (partition, file id, base instant).
    """
    deletes: dict[tuple[str, str, str], list[str]] = {}
    shared: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    for lf in logs:
        key = (lf.partition_path, lf.file_id, lf.base_instant)
        if lf.holds(target) and lf.only(target) and lf.deletable:
            deletes.setdefault(key, []).append(lf.path)
        elif lf.holds(target):
            shared.setdefault(key, []).append((lf.path, lf.size))
    for bf in base_files:
        if bf.instant == target:
            deletes.setdefault((bf.partition_path, bf.file_id, bf.instant), []).append(bf.path)
    out = [
        RollbackRequest(p, f, b, files_to_delete=tuple(sorted(set(paths))))
        for (p, f, b), paths in sorted(deletes.items())
    ]
    out.extend(
        RollbackRequest(p, f, b, log_blocks_to_delete=tuple(sorted(set(entries))))
        for (p, f, b), entries in sorted(shared.items())
    )
    return out


def plan_compaction_rollback(
    compaction_instant: str,
    operations: Sequence[CompactionOperation],
    outputs: Mapping[tuple[str, str], Sequence[str]],
    execute_time_links: Mapping[tuple[str, str], Sequence[str]],
) -> list[RollbackRequest]:
    """The requests that undo an inflight compaction, leaving its plan runnable again.

    Args:
        compaction_instant: ``C``.
        operations: the plan's operations (``partitionPath``, ``fileId``).
        outputs: per ``(partition, file id)``, the executor's outputs found on storage (base files named with ``C``,
            carry-over logs), relative paths.
        execute_time_links: per ``(partition, file id)``, the links created when the plan ran (empty for plans whose
            links were made at schedule time), relative paths that exist.

    Returns:
        One delete request per operation with something to delete, in plan order.
    """
    out: list[RollbackRequest] = []
    for op in operations:
        key = (op.partition_path, op.file_id)
        files = tuple(sorted({*outputs.get(key, ()), *execute_time_links.get(key, ())}))
        if files:
            out.append(RollbackRequest(key[0], key[1], compaction_instant, files_to_delete=files))
    return out
