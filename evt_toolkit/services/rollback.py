"""Running a rollback: find what an instant wrote, plan (:mod:`~evt_toolkit.services.rollback_planner`), undo it.

Order of events (``BaseRollbackActionExecutor`` on a v6 table, ``hudi-format.md`` §2 and §10):

1. ``R.rollback.requested`` — ``HoodieRollbackPlan`` (Avro) naming the instant and the requests;
2. ``R.rollback.inflight`` — empty;
3. for a *completed* deltacommit, its ``T.deltacommit`` file goes first, so that readers ignore its blocks before any
   of its files disappear;
4. the requests run: files deleted, rollback command blocks written into new log versions (token ``1-0-1``);
5. the rolled-back instant leaves the timeline: a deltacommit's ``inflight`` then ``requested`` files are deleted; an
   inflight compaction loses only ``C.compaction.inflight``, so its plan is requested again and can run again;
6. ``R.rollback`` — ``HoodieRollbackMetadata`` (Avro); then the instant's markers and ownership records are dropped
   (a compaction keeps its plan's records).

**What gets deleted is known from records, never from names.** Each file the toolkit creates is recorded before it
is created (:mod:`evt_toolkit.storage.ownership`): a failed deltacommit loses exactly the files its tasks recorded
(or, for a table written by stock Hudi, the files its markers and write stats name); a failed compaction run loses
exactly its recorded outputs — new base files, carry-over logs, execute-time links — while the links made at schedule
time, which belong to the plan, stay. A log file whose blocks are not all the failed instant's is never deleted: it
gets a rollback command block instead.

Every step can be repeated: a rollback left pending by a crash is resumed from its plan by the next call for the same
instant (deleting a missing file is a no-op, and a command block already written by this rollback is not written
twice). Its target is checked again first, as Hudi does when it executes a rollback: a write still committed (the
rollback died before un-committing it) that a later write now follows, or a compaction that completed since, is
refused and the table left as it is; and a log of the plan is deleted only while its blocks are all the target's (a
later write into the slice may have taken a deleted log's name).

**Which instants.** A requested or inflight (failed) deltacommit; an inflight compaction. A *completed* deltacommit
only when it is the last write on the timeline (no later write or table-service instant in any state), as Hudi
rolls back the last commit: nothing can then depend on it. A completed compaction, a compaction that has not
started (use ``table.compaction.unschedule``, which also removes its schedule-time links) and any other action are
refused with :class:`~evt_toolkit.services.rollback_planner.RollbackError`.

Example:
    >>> t.rollback("20250101000000000").deleted  # doctest: +SKIP
    ('region=r0/.00000000-…_20250101000000000.log.1_0-0-0',)
"""

from __future__ import annotations

import contextlib
import dataclasses
import posixpath
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evt_toolkit.compaction.schedule import abandoned_schedules, remove_abandoned_schedules
from evt_toolkit.errors import EvtError, LogFormatError, StorageError
from evt_toolkit.faults import fault_point
from evt_toolkit.format.log_writer import encode_rollback_command_block
from evt_toolkit.format.logfile import BlockType
from evt_toolkit.format.names import COMPLETED, INFLIGHT, REQUESTED, BaseFileName, LogFileName
from evt_toolkit.format.ownership import LOG, RUN, WRITE
from evt_toolkit.format.records import (
    RollbackMetadata,
    RollbackPartition,
    RollbackPlan,
    RollbackPlanRequest,
    WriteStat,
)
from evt_toolkit.services.clean import delete_files
from evt_toolkit.services.rollback_planner import (
    BaseFacts,
    LogFacts,
    RollbackError,
    RollbackRequest,
    command_log_name,
    plan_compaction_rollback,
    plan_deltacommit_rollback,
)
from evt_toolkit.storage.fs import hadoop_path, relative_path
from evt_toolkit.storage.links import delete_link_or_file, held_by_another_file
from evt_toolkit.storage.log_blocks import read_block_instants, scan_log, unreadable_log
from evt_toolkit.storage.ownership import drop_markers, drop_ownership, markers, owned_files
from evt_toolkit.table.fs_view import Listing, list_table_files
from evt_toolkit.table.guards import TABLE_SERVICE_VERSIONS, has_metadata_table, require_writable
from evt_toolkit.table.metadata_table import compaction_holding, load_metadata_table
from evt_toolkit.table.timeline import (
    COMPACTION,
    DELTA_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    WRITE_ACTIONS,
    Instant,
    InstantState,
)
from evt_toolkit.write.instants import new_instant_time, timeline_times
from evt_toolkit.write.metadata_sync import rollback_metadata_instant

if TYPE_CHECKING:
    from evt_toolkit.storage.fs import TableStorage
    from evt_toolkit.table.table import Table

__all__ = ["RollbackResult", "check_rollbackable", "rollback"]

#: ``HoodieRollbackPlan`` / ``HoodieRollbackMetadata`` version Hudi 0.14/0.15 writes.
ROLLBACK_VERSION = 1


@dataclass(frozen=True, slots=True)
class RollbackResult:
    """What a rollback did.

    Attributes:
        instant: the rollback instant ``R``.
        target: the instant rolled back.
        target_action: ``deltacommit`` or ``compaction``.
        deleted: data files deleted, relative to the base path.
        failed: data files of the plan that were not there to delete.
        command_block_logs: new log files holding a rollback command block.
        timeline_files_removed: the rolled-back instant's timeline files deleted.
        plan_requested_again: a compaction's plan is requested again (it can run again).
        resumed: a rollback left pending earlier was finished.
        unowned: 1.x only: files named with the rolled-back instant that no record owned, deleted by the name rule
            with the others (docs/hudi-1x.md §5).
    """

    instant: str
    target: str
    target_action: str
    deleted: tuple[str, ...]
    failed: tuple[str, ...]
    command_block_logs: tuple[str, ...]
    timeline_files_removed: tuple[str, ...]
    plan_requested_again: bool
    resumed: bool = False
    unowned: tuple[str, ...] = ()


# -- facts from storage ------------------------------------------------------------------------------------------------


def _partition_of(rel: str) -> str:
    return posixpath.dirname(rel)


_WHY = (
    "to tell which instants wrote into it; the rollback deletes nothing it cannot check: make the file readable "
    "(or restore it) and roll back again"
)


def _unreadable(storage: TableStorage, full: str, exc: BaseException) -> StorageError:
    return unreadable_log(storage, full, _WHY, exc)


def _log_facts(storage: TableStorage, rel: str) -> LogFacts | None:
    """The block instants of log ``rel``; ``None`` for a name that is no log, or one no longer there.

    Raises:
        StorageError: something stands under the name that cannot be read (names it and the table).
        LogFormatError: the log's framing is broken.
    """
    name = posixpath.basename(rel)
    parsed = LogFileName.parse(name)
    if parsed is None or parsed.extension != "log" or parsed.suffix:
        return None
    read = read_block_instants(storage, rel, _WHY)
    if read is None:
        return None
    return LogFacts(
        _partition_of(rel),
        rel,
        parsed.file_id,
        parsed.base_instant,
        parsed.version,
        read.size,
        read.instants,
        read.corrupt,
    )


def _slice_logs(listing: Listing, partition: str, file_id: str, base_instant: str | None) -> list[str]:
    return [
        lf.path
        for p, lf in listing.log_files
        if p == partition and lf.file_id == file_id and (base_instant is None or lf.instant == base_instant)
    ]


def _deltacommit_candidates(table: Table, inst: Instant, listing: Listing) -> tuple[set[str], set[str], set[str]]:
    """``(recorded logs, other logs that may hold the instant's blocks, base files)`` of deltacommit ``inst``.

    *Recorded* means the instant itself named the file before writing it: the toolkit's ownership records, or the
    write stats of a completed commit. Such a file whose blocks are all the instant's may be deleted. Logs found
    otherwise — through Hudi's APPEND markers, which name a file group's slice and not the file (tables written by
    stock Hudi, or a log shared on storage with append) — only ever get a rollback command block, never a delete,
    unless the instant created their whole file group (its slice is named with the instant).
    """
    target = inst.time
    recorded: set[str] = set()
    others: set[str] = set()
    bases: set[str] = set()
    for path, owned in owned_files(table.storage, target, [WRITE]).items():
        (recorded if owned.role == LOG else bases).add(path)
    for partition, marked, kind in markers(table.storage, target):
        parsed = BaseFileName.parse(marked)
        if parsed is None:
            continue
        if kind == "APPEND":
            # HoodieAppendHandle names the marker after a phony base file carrying the slice's base instant.
            others.update(_slice_logs(listing, partition, parsed.file_id, parsed.instant))
        else:
            bases.add(posixpath.join(partition, marked) if partition else marked)
    try:
        stats: tuple[WriteStat, ...] = table.timeline.commit_metadata(inst).write_stats
    except EvtError:
        stats = ()
    for st in stats:
        if st.path:
            (recorded if LogFileName.parse(st.file_name) else bases).add(st.path)
        elif st.file_id:
            # An inflight workload profile names the file groups the write was going to touch
            # (ListingBasedRollbackStrategy): their logs may hold its blocks.
            others.update(_slice_logs(listing, st.partition_path, st.file_id, None))
    return recorded, others - recorded, bases


# -- the plan as Avro --------------------------------------------------------------------------------------------------


def _plan_record(storage: TableStorage, target: str, action: str, requests: Sequence[RollbackRequest]) -> RollbackPlan:
    out = []
    for r in requests:
        if r.needs_command_block:
            out.append(
                RollbackPlanRequest(
                    r.partition_path,
                    r.file_id,
                    r.latest_base_instant,
                    (),
                    {hadoop_path(storage, p): size for p, size in r.log_blocks_to_delete},
                )
            )
        else:
            # MarkerBasedRollbackStrategy leaves fileId and latestBaseInstant empty for plain deletions.
            out.append(
                RollbackPlanRequest(
                    r.partition_path, "", "", tuple(hadoop_path(storage, p) for p in r.files_to_delete), {}
                )
            )
    return RollbackPlan(target, action, tuple(out), ROLLBACK_VERSION)


def _requests_from_plan(storage: TableStorage, plan: RollbackPlan) -> list[RollbackRequest]:
    out = []
    for r in plan.requests:
        files = tuple(relative_path(storage, p) for p in r.files_to_delete)
        blocks = tuple((relative_path(storage, p), size) for p, size in r.log_blocks_to_delete.items())
        fid, base = r.file_id, r.latest_base_instant
        if blocks and not fid:
            parsed = LogFileName.parse(posixpath.basename(blocks[0][0]))
            if parsed is not None:
                fid, base = parsed.file_id, parsed.base_instant
        out.append(RollbackRequest(r.partition_path, fid, base, files, blocks))
    return out


def _metadata_record(
    storage: TableStorage,
    rollback_instant: str,
    target: str,
    action: str,
    requests: Sequence[RollbackRequest],
    deleted: set[str],
    command_logs: Mapping[str, tuple[str, int]],
    elapsed_ms: int,
) -> RollbackMetadata:
    done: dict[str, list[str]] = defaultdict(list)
    failed: dict[str, list[str]] = defaultdict(list)
    rollback_logs: dict[str, dict[str, int]] = defaultdict(dict)
    failed_logs: dict[str, dict[str, int]] = defaultdict(dict)
    touched = sorted({r.partition_path for r in requests})
    for r in requests:
        p = r.partition_path
        for path in r.files_to_delete:
            (done if path in deleted else failed)[p].append(hadoop_path(storage, path))
        # BaseRollbackHelper records the failed commit's logs only for command-block requests.
        for path, size in r.log_blocks_to_delete:
            failed_logs[p][hadoop_path(storage, path)] = size
        written = command_logs.get(f"{r.partition_path}\x00{r.file_id}\x00{r.latest_base_instant}")
        if r.needs_command_block and written is not None:
            rollback_logs[p][hadoop_path(storage, written[0])] = written[1]
    partitions = {
        p: RollbackPartition(tuple(done[p]), tuple(failed[p]), rollback_logs[p], failed_logs[p]) for p in touched
    }
    return RollbackMetadata(rollback_instant, target, action, elapsed_ms, partitions, ROLLBACK_VERSION)


# -- execution ---------------------------------------------------------------------------------------------------------


def _timeline_file(table: Table, instant: str, action: str, state: str) -> str:
    if state == COMPLETED and table.config.timeline_layout >= 2:
        # Layout 2: an existing completed instant is found by its file (its completion time is in the name); a new
        # one (the rollback's) gets a completion time issued now, after every time on the timeline.
        tl = table.refresh().timeline
        for inst in tl.instants:
            if inst.time == instant and inst.action == action and inst.is_completed:
                found = tl.state_file(inst, InstantState.COMPLETED)
                if found:
                    return found
        completion = new_instant_time(
            [*timeline_times(tl.instants), instant], table.config.timezone, scope=table.storage.uri
        )
        return table.instant_file(instant, action, COMPLETED, completion)
    return table.instant_file(instant, action, state)


def _write_command_block(
    table: Table, listing: Listing, r: RollbackRequest, rollback_instant: str, target: str
) -> tuple[str, int]:
    """Write (once) the command block of a request; returns the new log and its size."""
    storage = table.storage
    existing = _slice_logs(listing, r.partition_path, r.file_id, r.latest_base_instant)
    for rel in existing:
        facts = _log_facts(storage, rel)
        if facts is None or rollback_instant not in facts.block_instants:
            continue
        try:
            for b in scan_log(storage, rel, facts.size, full_paths=True):
                if b.block_type is BlockType.COMMAND and b.target_instant_time == target:
                    return rel, facts.size  # written before a crash: do not write it twice
        except OSError as exc:
            raise _unreadable(storage, storage.full_path(rel), exc) from exc
    versions = [v for p in existing if (parsed := LogFileName.parse(posixpath.basename(p))) for v in [parsed.version]]
    name = command_log_name(r.file_id, r.latest_base_instant, versions)
    rel = posixpath.join(r.partition_path, name) if r.partition_path else name
    data = encode_rollback_command_block(rollback_instant, target)
    storage.write_bytes_atomic(rel, data)
    return rel, len(data)


def _execute(
    table: Table,
    rollback_instant: str,
    target: str,
    action: str,
    requests: Sequence[RollbackRequest],
    timeline_files: Sequence[str],
    started: float,
    resumed: bool,
) -> RollbackResult:
    storage = table.storage
    # The metadata table's instant `target` goes first, at this rollback's instant, as Hudi's metadata writer rolls
    # it back before the data rollback completes; resumable with the same instant.
    if has_metadata_table(table):
        rollback_metadata_instant(table, target, rollback_instant)
    to_delete = [p for r in requests for p in r.files_to_delete]
    deleted = delete_files(storage, to_delete)
    # A file of the target left on storage would outlive the rollback and be read again once the active timeline
    # starts after the target (isBeforeTimelineStarts: an instant older than the first completed write counts as
    # archived, so committed). The rollback stays pending instead, and rolling the target back again resumes it.
    left = [p for p in to_delete if p not in deleted and storage.lexists(p)]
    if left:
        raise RollbackError(
            f"rollback {rollback_instant} of {target} could not delete {len(left)} file(s), e.g. "
            f"{storage.full_path(left[0])}; it stays pending: roll back {target} again to finish it"
        )
    fault_point("rollback.after_delete")
    listing = list_table_files(storage)
    command_logs: dict[str, tuple[str, int]] = {}
    for r in requests:
        if r.needs_command_block:
            key = f"{r.partition_path}\x00{r.file_id}\x00{r.latest_base_instant}"
            command_logs[key] = _write_command_block(table, listing, r, rollback_instant, target)
    fault_point("rollback.after_blocks")
    removed = []
    for rel in timeline_files:
        if storage.exists(rel):
            storage.delete_file(rel)
            removed.append(rel)
    fault_point("rollback.before_complete")
    meta = _metadata_record(
        storage,
        rollback_instant,
        target,
        action,
        requests,
        deleted,
        command_logs,
        int((time.monotonic() - started) * 1000),
    )
    storage.write_bytes_atomic(
        _timeline_file(table, rollback_instant, ROLLBACK, COMPLETED),
        meta.encode(),
    )
    # WriteMarkers.quietDeleteMarkerDir: the markers and records only served to find the instant's files. A
    # compaction keeps its plan's records (schedule-time links) and loses those of the run that was undone.
    with contextlib.suppress(EvtError):
        drop_ownership(storage, target, [RUN] if action == COMPACTION else None)
        if action == COMPACTION:  # the run's markers (Hudi drops an instant's markers once it is rolled back)
            drop_markers(storage, target)
    table.refresh()
    return RollbackResult(
        instant=rollback_instant,
        target=target,
        target_action=action,
        deleted=tuple(sorted(deleted)),
        failed=tuple(sorted(p for p in to_delete if p not in deleted)),
        command_block_logs=tuple(sorted(v[0] for v in command_logs.values())),
        timeline_files_removed=tuple(removed),
        plan_requested_again=action == COMPACTION,
        resumed=resumed,
    )


def _target_timeline_files(table: Table, target: str, action: str) -> list[str]:
    if action == COMPACTION:
        # Only the inflight state goes: the plan stays requested (revertInstantFromInflightToRequested).
        return [_timeline_file(table, target, COMPACTION, INFLIGHT)]
    return [_timeline_file(table, target, action, s) for s in (COMPLETED, INFLIGHT, REQUESTED)]


def _find_target(table: Table, instant: str) -> Instant:
    found = [i for i in table.timeline.instants if i.time == instant and i.action in WRITE_ACTIONS]
    if not found:
        others = [i.action for i in table.timeline.instants if i.time == instant]
        what = f" (a {others[0]} instant)" if others else ""
        raise RollbackError(f"{table.storage.uri}: no write or compaction instant {instant} to roll back{what}")
    return found[0]


def _check_rollbackable(table: Table, inst: Instant) -> None:
    uri = table.storage.uri
    if inst.action == COMPACTION:
        if inst.is_requested:
            raise RollbackError(
                f"compaction {inst.time} of {uri} has not started, so there is nothing to roll back; take the plan "
                "back with table.compaction.unschedule(instant)"
            )
        return
    if inst.action != DELTA_COMMIT:
        state = "completed " if inst.is_completed else ""
        raise RollbackError(
            f"cannot roll back {state}{inst.action} {inst.time} of {uri}: only deltacommits and inflight compactions "
            "can be rolled back"
        )
    if inst.is_completed:
        savepoints = [i for i in table.timeline.instants if i.action == SAVEPOINT and i.time == inst.time]
        if savepoints:
            # BaseRollbackActionExecutor.validateSavepointRollbacks: a savepoint keeps the files of its commit.
            raise RollbackError(
                f"cannot roll back deltacommit {inst.time} of {uri}: it is savepointed (savepoint {inst.time}); "
                "delete the savepoint first, as Hudi requires"
            )
        if inst.completion_time and has_metadata_table(table):
            mdt = load_metadata_table(table)
            compaction = compaction_holding(mdt, inst.completion_time) if mdt is not None else None
            if compaction is not None:
                raise RollbackError(
                    f"cannot roll back deltacommit {inst.time} of {uri}: it completed ({inst.completion_time}) before "
                    f"the metadata table's compaction {compaction}, whose base file lists its files; Hudi refuses "
                    "this too (a restore is the way), or disable the metadata table first (t.metadata_table.disable)"
                )
        later = [f"{i.action} {i.time}" for i in table.timeline.instants if i.time > inst.time]
        later = [x for x in later if x.split()[0] in WRITE_ACTIONS]
        if later:
            raise RollbackError(
                f"cannot roll back completed deltacommit {inst.time} of {uri}: later instants depend on it "
                f"({', '.join(later)}); only the last write can be rolled back"
            )


def check_rollbackable(table: Table, instant: str) -> None:
    """Raise the :class:`RollbackError` that :func:`rollback` would raise for ``instant`` before changing anything
    (read only: what a dry run reports). A pending rollback of ``instant`` is checked as its resume is.

    Raises:
        RollbackError: naming the table, the instant and why.
    """
    pending = table.timeline.pending_rollback_of(instant)
    if pending is not None:
        inst, plan = pending
        _check_still_rollbackable(table, inst.time, instant, plan.action or DELTA_COMMIT)
        return
    _check_rollbackable(table, _find_target(table, instant))


def _check_still_rollbackable(table: Table, rollback_instant: str, target: str, action: str) -> None:
    """A pending rollback was planned when its target could be rolled back; the table may have moved on since.

    As Hudi validates the commit sequence when it executes a rollback, resumed ones included
    (``BaseRollbackActionExecutor.validateRollbackCommitSequence``): a target still committed — the rollback was
    killed before it un-committed the write — is checked again like a new request (a later write now depends on it),
    and a compaction that completed since (run again after the rollback was killed) is never rolled back: the plan
    would delete files the completed compaction wrote under the same names (its carry-over log). Nothing has been
    changed by the rollback yet in either case, so refusing leaves the table as it is.
    """
    uri = table.storage.uri
    found = [i for i in table.timeline.instants if i.time == target and i.action in WRITE_ACTIONS]
    current = found[0] if found else None
    if current is None or not current.is_completed:
        return
    if action == COMPACTION or current.action != DELTA_COMMIT:
        raise RollbackError(
            f"rollback {rollback_instant} of {uri} was planned for the inflight compaction {target}, which has "
            f"completed since ({current.action} {target}); a completed compaction is never rolled back, so the pending "
            "rollback cannot finish (it changed nothing)"
        )
    try:
        _check_rollbackable(table, current)
    except RollbackError as exc:
        raise RollbackError(
            f"rollback {rollback_instant} was killed before it changed anything, and deltacommit {target} can no "
            f"longer be rolled back: {exc}"
        ) from None


def _still_the_targets(storage: TableStorage, request: RollbackRequest, target: str) -> RollbackRequest:
    """The request without the logs that are no longer the target's own.

    A version-6 log is named after its slice and a version one past the slice's newest log, so once a rollback has
    deleted its target's log, the next write into that slice takes the same name. The plan names files, not their
    contents: resumed, it deletes a log only while every block in it is the target's (as the first attempt decided).
    """
    keep = []
    for rel in request.files_to_delete:
        facts = _log_facts(storage, rel) if LogFileName.parse(posixpath.basename(rel)) is not None else None
        if facts is not None and any(i != target for i in facts.block_instants):
            continue
        keep.append(rel)
    return dataclasses.replace(request, files_to_delete=tuple(keep))


def _resume(table: Table, instant: str) -> RollbackResult | None:
    tl = table.timeline
    pending = tl.pending_rollback_of(instant)
    if pending is None:
        return None
    inst, plan = pending
    action = plan.action or DELTA_COMMIT
    _check_still_rollbackable(table, inst.time, instant, action)
    requests = _requests_from_plan(table.storage, plan)
    if action == DELTA_COMMIT:
        requests = [_still_the_targets(table.storage, r, instant) for r in requests]
    remove_abandoned_schedules(table)  # after every refusal, as for a new rollback
    if not inst.is_inflight:
        table.storage.write_bytes_atomic(_timeline_file(table, inst.time, ROLLBACK, INFLIGHT), b"", overwrite=True)
    target = next((i for i in tl.instants if i.time == instant and i.action == DELTA_COMMIT), None)
    if target is not None and target.is_completed:
        # Killed before it un-committed the write: the commit file goes first, as on the first attempt.
        table.storage.delete_file(_timeline_file(table, instant, DELTA_COMMIT, COMPLETED))
    return _execute(
        table,
        inst.time,
        instant,
        action,
        requests,
        _target_timeline_files(table, instant, action),
        time.monotonic(),
        True,
    )


def _compaction_requests(table: Table, inst: Instant, listing: Listing) -> list[RollbackRequest]:
    """Undo what the run of compaction ``C`` created: exactly its recorded outputs (new base files, carry-over logs,
    execute-time links). Links made at schedule time belong to the plan, which stays requested, and stay too.

    A run recorded nothing only if it was made by an older tool: then the base files named with ``C`` go (Hudi names
    a base file after the instant that wrote it), and no log file is touched.
    """
    plan = table.timeline.compaction_plan(inst)
    ops = plan.operations
    c = inst.time
    storage = table.storage
    owned = owned_files(storage, c, [RUN])
    # A recorded link name that another file holds (a writer's committed log) is not the run's.
    foreign = {
        link.symlink_path for link in plan.links if link.symlink_path in owned and held_by_another_file(storage, link)
    }
    found: list[str] = [p for p in owned if p not in foreign and storage.lexists(p)]
    if not owned:
        found = [b.path for b in listing.base_files if b.instant == c]
    outputs: dict[tuple[str, str], list[str]] = {}
    for path in found:
        name = posixpath.basename(path)
        parsed_log = LogFileName.parse(name)
        parsed_base = BaseFileName.parse(name)
        fid = parsed_log.file_id if parsed_log else parsed_base.file_id if parsed_base else ""
        outputs.setdefault((_partition_of(path), fid), []).append(path)
    return plan_compaction_rollback(c, ops, outputs, {})


def _deltacommit_requests_v2(table: Table, inst: Instant, listing: Listing) -> tuple[list[RollbackRequest], list[str]]:
    """1.x: ``(requests deleting every file named with W, those of them that nothing records)``.

    A 1.x deltacommit ``W`` writes only new files named with ``W`` (logs ``.{fid}_{W}.log.*``, base files
    ``*_{W}.parquet``), and no other instant ever names a file with ``W``, so Hudi rolls it back by deleting them,
    with no command block (``ListingBasedRollbackStrategy``, docs/hudi-1x.md §5). Its records — ownership records,
    Hudi's ``CREATE`` markers, the write stats of its commit or workload profile — coincide with the name rule; a file
    named ``W`` that no record owns (a stock writer's log without a marker) goes too, and is reported: left in place it
    would be read again once the active timeline starts after ``W``, which then counts as archived and committed.
    """
    w = inst.time
    storage = table.storage
    recorded: set[str] = set(owned_files(storage, w, [WRITE]))
    for partition, marked, _kind in markers(storage, w):
        recorded.add(posixpath.join(partition, marked) if partition else marked)
    try:
        stats: tuple[WriteStat, ...] = table.timeline.commit_metadata(inst).write_stats
    except EvtError:
        stats = ()
    recorded.update(st.path for st in stats if st.path)
    named: dict[str, tuple[str, str]] = {}
    for partition, lf in listing.log_files:
        if lf.instant == w:
            named[lf.path] = (partition, lf.file_id)
    for bf in listing.base_files:
        if bf.instant == w:
            named[bf.path] = (_partition_of(bf.path), bf.file_id)
    groups: dict[tuple[str, str], list[str]] = {}
    for path, key in named.items():
        groups.setdefault(key, []).append(path)
    requests = [
        RollbackRequest(p, f, w, files_to_delete=tuple(sorted(paths))) for (p, f), paths in sorted(groups.items())
    ]
    return requests, sorted(p for p in named if p not in recorded)


def _deltacommit_requests(table: Table, inst: Instant, listing: Listing) -> list[RollbackRequest]:
    recorded, others, bases = _deltacommit_candidates(table, inst, listing)
    facts: list[LogFacts] = []
    for rel in sorted(recorded | others):
        try:
            f = _log_facts(table.storage, rel)
        except LogFormatError as exc:
            raise RollbackError(
                f"cannot tell what {inst.time} wrote into {table.storage.full_path(rel)}: {exc}"
            ) from exc
        if f is not None:
            deletable = rel in recorded or f.base_instant == inst.time
            facts.append(dataclasses.replace(f, deletable=deletable))
    base_facts = []
    for rel in sorted(bases):
        parsed = BaseFileName.parse(posixpath.basename(rel))
        if parsed is not None and table.storage.exists(rel):
            base_facts.append(BaseFacts(_partition_of(rel), rel, parsed.file_id, parsed.instant))
    return plan_deltacommit_rollback(inst.time, facts, base_facts)


def rollback(table: Table, instant: str) -> RollbackResult:
    """Roll back a failed (or the last completed) deltacommit, or an inflight compaction.

    Args:
        table: the table (v6, timeline layout 1).
        instant: the instant to roll back.

    Returns:
        What was done.

    Raises:
        RollbackError: the instant is unknown, a completed instant something later depends on, a completed
            compaction, a compaction that has not started, or another action.
        UnsupportedTableError: a table this toolkit does not write (version, type, metadata table).

    Example:
        >>> rollback(t, failed_instant).timeline_files_removed  # doctest: +SKIP
        ('.hoodie/20250101000000000.deltacommit.inflight', '.hoodie/20250101000000000.deltacommit.requested')
    """
    table.refresh()
    require_writable(table, f"roll back {instant}", versions=TABLE_SERVICE_VERSIONS)
    resumed = _resume(table, instant)
    if resumed is not None:
        return resumed
    inst = _find_target(table, instant)
    _check_rollbackable(table, inst)
    remove_abandoned_schedules(table)  # after every refusal: a refused rollback leaves the table as it was
    started = time.monotonic()
    listing = list_table_files(table.storage)
    unowned: list[str] = []
    if inst.action == COMPACTION:
        requests = _compaction_requests(table, inst, listing)
    elif table.config.timeline_layout >= 2:
        requests, unowned = _deltacommit_requests_v2(table, inst, listing)
    else:
        requests = _deltacommit_requests(table, inst, listing)
    storage = table.storage
    if inst.action == DELTA_COMMIT and inst.is_completed:
        # A schedule that died before its plan leaves links named with an instant C no timeline knows: invisible
        # only while a completed write older than C is on the timeline. Rolling back the last write may take the
        # last such one away; the next write would then make C count as archived (isBeforeTimelineStarts) and its
        # copies of this write's logs be read. Links of schedules newer than the target go now, whatever their age
        # (a schedule still running gets them made again by its run, which then finds their targets gone).
        for c, paths in abandoned_schedules(table, older_than_s=0).items():
            if c > inst.time:
                for p in paths:
                    delete_link_or_file(storage, p)
                drop_ownership(storage, c)
    r = new_instant_time(timeline_times(table.timeline.instants), table.config.timezone, scope=table.storage.uri)
    plan = _plan_record(storage, instant, inst.action, requests)
    storage.write_bytes_atomic(
        _timeline_file(table, r, ROLLBACK, REQUESTED),
        plan.encode(),
    )
    fault_point("rollback.after_requested")
    storage.write_bytes_atomic(_timeline_file(table, r, ROLLBACK, INFLIGHT), b"")
    fault_point("rollback.after_inflight")
    timeline_files = _target_timeline_files(table, instant, inst.action)
    if inst.action == DELTA_COMMIT and inst.is_completed:
        # The commit file goes before any data file: from then on readers skip the instant's blocks.
        storage.delete_file(timeline_files[0])
        fault_point("rollback.after_uncommit")
    result = _execute(table, r, instant, inst.action, requests, timeline_files, started, False)
    return dataclasses.replace(result, unowned=tuple(unowned)) if unowned else result
