"""A pending compaction's files against storage: where its plan lives, the old slice's logs, and what stops it.

The executor validates a plan with :func:`validate_plan_files` before it writes anything; the scheduler calls the
same check right after writing a plan (a write that completed while the plan was being made may have added a log the
plan missed), and :mod:`~evt_toolkit.compaction.validate` reports it without running. Kept apart from the executor
and the scheduler so that both, and the unschedule, use one copy.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from evt_toolkit.compaction.merge_task import partition_listing
from evt_toolkit.errors import PlanValidationError
from evt_toolkit.format.logfile import BlockType, LogBlock
from evt_toolkit.format.names import REQUESTED, LogFileName
from evt_toolkit.storage.log_blocks import scan_logs
from evt_toolkit.table.timeline import COMPACTION

if TYPE_CHECKING:
    from collections.abc import Iterable

    from evt_toolkit.format.records import CompactionPlan
    from evt_toolkit.storage.fs import FileEntry
    from evt_toolkit.table.fs_view import FileGroup
    from evt_toolkit.table.table import Table

__all__ = ["old_slice_logs", "overlapping_writes", "plan_file", "unmergeable_blocks", "validate_plan_files"]


def plan_file(table: Table, instant: str, state: str = REQUESTED) -> str:
    """Path of the compaction's ``requested``/``inflight`` file, relative to the base path."""
    return table.instant_file(instant, COMPACTION, state)


def _rel(partition: str, name: str) -> str:
    return posixpath.join(partition, name) if partition else name


def old_slice_logs(
    table: Table,
    partition: str,
    file_id: str,
    base_instant: str,
    compaction_instant: str | None = None,
    *,
    listings: dict[str, list[FileEntry]] | None = None,
) -> list[str]:
    """Names of the logs of slice ``base_instant`` of a file group on storage, in replay order.

    Table version 6 names a log after its slice's base instant. On 1.x (timeline layout 2) a log is named after its
    deltacommit and joins the slice with the greatest base instant ≤ its completion time, so the old slice of a
    pending compaction ``C`` is read from the file-system view, keeping the logs that completed before ``C`` was
    requested (a write completing later joins slice ``C`` once ``C`` completes). ``listings`` keeps each
    partition's listing for the caller's next operations (one LIST per partition, not per operation).
    """
    files = [] if table.config.timeline_layout >= 2 else partition_listing(table.storage, partition, listings)
    return _SliceLogs(table, compaction_instant).logs(partition, file_id, base_instant, files)


def _old_slice_logs_1x(table: Table, group: FileGroup, base_instant: str, compaction: str) -> list[str]:
    timeline = table.timeline
    for s in group.slices:
        if s.base_instant == base_instant:
            return [lf.name for lf in s.log_files if (timeline.completion_time(lf.instant) or lf.instant) < compaction]
    return []


class _SliceLogs:
    """:func:`old_slice_logs` for every operation of a plan, each partition's names parsed once (each file group's
    slices found once on 1.x) rather than once per operation."""

    def __init__(self, table: Table, compaction_instant: str | None) -> None:
        self.table, self.instant = table, compaction_instant
        self._v6: dict[str, dict[tuple[str, str], list[str]]] = {}
        self._groups: dict[tuple[str, str], FileGroup] | None = None

    def logs(self, partition: str, file_id: str, base_instant: str, files: list[FileEntry]) -> list[str]:
        if self.table.config.timeline_layout >= 2:
            if self.instant is None:
                uri = self.table.storage.uri
                raise PlanValidationError(f"{uri}: the old slice of a 1.x compaction needs its instant")
            if self._groups is None:
                self._groups = {
                    (g.partition_path, g.file_id): g
                    for g in self.table.view.file_groups(include_pending_compaction=False)
                }
            group = self._groups.get((partition, file_id))
            return [] if group is None else _old_slice_logs_1x(self.table, group, base_instant, self.instant)
        index = self._v6.get(partition)
        if index is None:
            found: dict[tuple[str, str], list[LogFileName]] = {}
            for e in files:
                parsed = LogFileName.parse(e.name)
                if parsed and parsed.extension == "log" and not parsed.suffix:
                    found.setdefault((parsed.file_id, parsed.base_instant), []).append(parsed)
            index = self._v6[partition] = {
                k: [p.name for p in sorted(v, key=lambda p: p.sort_key())] for k, v in found.items()
            }
        return list(index.get((file_id, base_instant), []))


def overlapping_writes(
    table: Table, partition: str, file_id: str, compaction_instant: str, files: list[FileEntry] | None = None
) -> list[str]:
    """Logs of a file group written by a deltacommit requested before ``C`` that is pending or completed after ``C``.

    Fence 2 of docs/hudi-1x.md §4.4 (1.x only): by name order such a log replays *before* the links named ``C``
    once it joins slice ``C``, so the leftovers would overwrite its newer data. The operator lets it complete and
    runs the plan again after rolling it back, or unschedules the plan. ``files`` is the partition's listing when
    the caller just took one.
    """
    if table.config.timeline_layout < 2:
        return []
    timeline = table.timeline
    pending = {i.time for i in timeline.pending()}
    if files is None:
        files = table.storage.list_dir(partition)[0]
    out = []
    for e in files:
        parsed = LogFileName.parse(e.name)
        if (
            parsed is None
            or parsed.extension != "log"
            or parsed.suffix
            or parsed.file_id != file_id
            or parsed.base_instant >= compaction_instant
        ):
            continue
        completion = timeline.completion_time(parsed.base_instant)
        if parsed.base_instant in pending or (completion is not None and completion >= compaction_instant):
            out.append(e.path)
    return sorted(out)


def validate_plan_files(
    table: Table,
    plan: CompactionPlan,
    instant: str | None = None,
    listings: dict[str, list[FileEntry]] | None = None,
) -> list[str]:
    """Problems of a plan against storage (empty when it can run): missing files, broken prefix rule.

    Checks, per operation: the base file and every compacted log exist; the compacted logs followed by the link
    targets are exactly the old slice's logs in replay order (so the compacted set is a prefix and nothing of the
    slice is forgotten); on 1.x, no write requested before ``instant`` completed after it or is still pending in the
    file group (:func:`overlapping_writes`). ``listings`` (partition -> files) shares the partitions' listings with
    the caller: those it holds are used, those it lacks are listed and put there.
    """
    storage = table.storage
    problems: list[str] = []
    if listings is None:
        listings = {}
    present: dict[str, set[str]] = {}
    slices = _SliceLogs(table, instant)
    for op in plan.operations:
        partition = op.partition_path
        fid = op.file_id
        data_file = op.data_file
        files = partition_listing(storage, partition, listings)  # one per partition proves its files present
        if partition not in present:
            present[partition] = {e.name for e in files}
        names = present[partition]
        actual = slices.logs(partition, fid, op.base_instant, files)
        if data_file and data_file not in names:
            problems.append(f"base file {storage.full_path(_rel(partition, data_file))} is missing")
        deltas = list(op.delta_files)
        for d in deltas:
            if d not in names:
                problems.append(f"log file {storage.full_path(_rel(partition, d))} is missing")
        targets = [x.target for x in op.links]
        planned = deltas + targets
        if planned != actual[: len(planned)] or (targets and planned != actual):
            problems.append(
                f"file group {fid} in {partition!r}: compacted logs {deltas} followed by leftovers {targets} are not "
                f"the slice's logs in replay order {actual} (prefix rule)"
            )
        elif not targets and planned != actual:
            extra = actual[len(planned) :]
            problems.append(
                f"file group {fid} in {partition!r}: logs {extra} of the slice are neither compacted nor linked "
                "(written after the plan listed the slice: unschedule the plan and schedule again)"
            )
        if instant is not None:
            for path in overlapping_writes(table, partition, fid, instant, files):
                problems.append(
                    f"log {storage.full_path(path)} of file group {fid} was written by a deltacommit requested before "
                    f"compaction {instant} that is still pending or completed after it: it would replay before the "
                    "plan's leftovers (docs/hudi-1x.md §4.4, fence 2); let it complete or roll it back, or unschedule "
                    "the plan"
                )
    return problems


def unmergeable_blocks(
    table: Table, logs: Iterable[tuple[str, int]], scans: dict[tuple[str, int], list[LogBlock]] | None = None
) -> tuple[str, str, str] | None:
    """The first of ``logs`` (``(path relative to the table, size)``) holding a block of a committed write that a
    compaction run does not merge, as ``(its full path, what it holds, the write)``; else ``None``.

    Partial-update blocks (``IS_PARTIAL`` header, Hudi 1.1's partial updates), HFile data blocks and CDC blocks:
    every task over such a log refuses its file group. The block headers are read as the run reads them; blocks of a
    rolled-back or uncommitted write are not read, so not merged either. Each log's scan is put into ``scans`` (by
    ``(path, size)``) when given, for the run's tasks to use instead of reading the headers again.
    """
    timeline = table.timeline
    logs = list(logs)
    table.storage.prefetch([path for path, _ in logs])  # on object stores: fetched in parallel, not one by one
    for (path, size), blocks in zip(logs, scan_logs(table.storage, logs), strict=True):
        if scans is not None:
            scans[(path, size)] = blocks
        rolled_back = {b.target_instant_time for b in blocks if b.block_type is BlockType.COMMAND}
        for blk in blocks:
            if blk.is_corrupt or not blk.is_data or blk.instant_time is None:
                continue
            if blk.instant_time in rolled_back or not timeline.is_visible(blk.instant_time):
                continue
            if blk.is_partial:
                what = "partial-update blocks (IS_PARTIAL)"
            elif blk.block_type in (BlockType.HFILE_DATA, BlockType.CDC_DATA):
                what = f"{blk.block_type.name} blocks"
            else:
                continue
            return table.storage.full_path(path), what, blk.instant_time
    return None
