"""The active timeline of a Hudi table: instants, their states and their metadata files.

Mirrors ``HoodieActiveTimeline`` with ``TimelineLayout`` version 1 semantics, which Hudi also applies to layout 2:
state transitions write new files next to the old ones, and loading groups files by (requested time, comparable
action) keeping only the highest state (REQUESTED < INFLIGHT < COMPLETED). The comparable action folds
``compaction`` into ``commit``, ``logcompaction`` into ``deltacommit`` and ``clustering`` into ``replacecommit``,
because those instants complete under the latter action.
"""

from __future__ import annotations

import enum
import posixpath
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evt_toolkit.errors import EvtError, StorageError, TimelineError
from evt_toolkit.format.metadata import (
    decode_clean_metadata,
    decode_clean_plan,
    decode_commit_metadata,
    decode_compaction_plan,
    decode_replace_requested,
    decode_rollback_metadata,
    decode_rollback_plan,
)
from evt_toolkit.format.names import InstantFileName
from evt_toolkit.format.records import CleanMetadata, CleanPlan, CommitMetadata, CompactionPlan, RollbackPlan

if TYPE_CHECKING:
    from evt_toolkit.storage.fs import TableStorage
    from evt_toolkit.table.config import TableConfig

__all__ = [
    "CLEAN",
    "CLUSTERING",
    "COMMIT",
    "COMPACTION",
    "DELTA_COMMIT",
    "LOG_COMPACTION",
    "REPLACE_COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "Instant",
    "InstantState",
    "Timeline",
    "comparable_action",
]

COMMIT = "commit"
DELTA_COMMIT = "deltacommit"
REPLACE_COMMIT = "replacecommit"
COMPACTION = "compaction"
LOG_COMPACTION = "logcompaction"
CLUSTERING = "clustering"
CLEAN = "clean"
ROLLBACK = "rollback"
SAVEPOINT = "savepoint"
RESTORE = "restore"
#: Actions that delete data files of completed instants (a clean's old slices, a rolled-back or restored commit's).
FILE_DELETING_ACTIONS = (CLEAN, ROLLBACK, RESTORE)

# HoodieTimeline.getCommitsTimeline and getCommitsAndCompactionTimeline (the "write timeline").
COMMIT_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT})
WRITE_ACTIONS = COMMIT_ACTIONS | {COMPACTION, LOG_COMPACTION, CLUSTERING}

# InstantComparatorV1/V2.COMPARABLE_ACTIONS.
_COMPARABLE_ACTIONS = {COMPACTION: COMMIT, LOG_COMPACTION: DELTA_COMMIT, CLUSTERING: REPLACE_COMMIT}


def comparable_action(action: str) -> str:
    """The action an instant is grouped and ordered under (``compaction`` → ``commit``, ...)."""
    return _COMPARABLE_ACTIONS.get(action, action)


class InstantState(enum.StrEnum):
    """``HoodieInstant.State``, in increasing order of progress."""

    REQUESTED = "REQUESTED"
    INFLIGHT = "INFLIGHT"
    COMPLETED = "COMPLETED"

    @property
    def rank(self) -> int:
        """0 for REQUESTED, 1 for INFLIGHT, 2 for COMPLETED."""
        return _STATE_RANK[self]


_STATE_RANK = {InstantState.REQUESTED: 0, InstantState.INFLIGHT: 1, InstantState.COMPLETED: 2}


@dataclass(frozen=True, slots=True)
class Instant:
    """One instant of the timeline, at its highest state.

    Attributes:
        time: the requested time (``yyyyMMddHHmmssSSS``).
        action: as Hudi's timeline reports it: a completed compaction is ``commit`` and a pending one
            ``compaction``; a completed log compaction is ``deltacommit``; a pending v8+ clustering is
            ``clustering`` and completes as ``replacecommit``.
        state: the highest state found on storage.
        completion_time: layout 2: the completion time from the completed file's name; otherwise ``None`` (on
            layout 1 the requested time is the ordering).
        file_name: path, relative to the table base path, of the file of the highest state.
    """

    time: str
    action: str
    state: InstantState
    completion_time: str | None
    file_name: str

    @property
    def is_completed(self) -> bool:
        """The instant has completed."""
        return self.state is InstantState.COMPLETED

    @property
    def is_inflight(self) -> bool:
        """The instant is inflight (started, not completed)."""
        return self.state is InstantState.INFLIGHT

    @property
    def is_requested(self) -> bool:
        """The instant is only requested (scheduled)."""
        return self.state is InstantState.REQUESTED

    @property
    def comparable_action(self) -> str:
        """The action used for grouping and ordering (``compaction`` → ``commit``, ...)."""
        return comparable_action(self.action)


_Key = tuple[str, str]  # (requested time, comparable action)


class Timeline:
    """The active timeline of a table, loaded once from storage.

    Attributes:
        instants: one per (time, comparable action) at its highest state, sorted by (time, comparable action).
        layout_version: the timeline layout (1 for v6, 2 for v8/v9).

    Example:
        >>> from evt_toolkit.storage.fs import TableStorage
        >>> from evt_toolkit.table.config import load_table_config
        >>> storage = TableStorage.from_uri("/data/trips")  # doctest: +SKIP
        >>> tl = Timeline.load(storage, load_table_config(storage))  # doctest: +SKIP
        >>> [i.time for i in tl.completed_commits()]  # doctest: +SKIP
    """

    __slots__ = ("_by_time", "_commit_cache", "_files", "_storage", "instants", "layout_version", "timeline_path")

    def __init__(
        self,
        instants: Iterable[Instant],
        layout_version: int,
        *,
        storage: TableStorage | None = None,
        timeline_path: str = ".hoodie",
        state_files: dict[_Key, dict[InstantState, str]] | None = None,
    ) -> None:
        """Build a timeline from instants (``load`` is the usual entry point).

        Args:
            instants: the instants, one per (time, comparable action).
            layout_version: 1 or 2.
            storage: where to read instant files from (needed by the metadata accessors).
            timeline_path: the timeline folder relative to the base path.
            state_files: per (time, comparable action), the file of each state present on storage.
        """
        self.instants: tuple[Instant, ...] = tuple(sorted(instants, key=lambda i: (i.time, i.comparable_action)))
        self.layout_version = layout_version
        self.timeline_path = timeline_path
        self._storage = storage
        self._files: dict[_Key, dict[InstantState, str]] = state_files if state_files is not None else {}
        self._commit_cache: dict[str, CommitMetadata] = {}
        self._by_time: dict[str, list[Instant]] = {}
        for inst in self.instants:
            self._by_time.setdefault(inst.time, []).append(inst)
            self._files.setdefault((inst.time, inst.comparable_action), {}).setdefault(inst.state, inst.file_name)

    # -- loading ----------------------------------------------------------------------------------------------------
    @classmethod
    def load(cls, storage: TableStorage, config: TableConfig) -> Timeline:
        """List ``config.timeline_path`` and build the timeline.

        Sub-folders (``archived``, ``history``, ``.aux``, ``.temp``, ``.schema``, ``metadata``, ``timeline`` on
        layout 1) and files that are not instants (``hoodie.properties``, ``.crc`` side files) are ignored.

        Args:
            storage: the table's storage.
            config: the table configuration.
        """
        files, _dirs = storage.list_dir(config.timeline_path)
        groups: dict[_Key, dict[InstantState, tuple[InstantFileName, str]]] = {}
        for entry in files:
            parsed = InstantFileName.parse(entry.name)
            if parsed is None:
                continue
            key = (parsed.requested_time, comparable_action(parsed.action))
            state = InstantState(parsed.state)
            # Keep the first file per state in name order; two files of one state would be a corrupt timeline.
            groups.setdefault(key, {}).setdefault(state, (parsed, entry.path))
        instants: list[Instant] = []
        state_files: dict[_Key, dict[InstantState, str]] = {}
        for key, by_state in groups.items():
            top = max(by_state, key=lambda s: s.rank)
            parsed, rel = by_state[top]
            completion = parsed.completion_time if config.timeline_layout >= 2 else None
            instants.append(Instant(parsed.requested_time, parsed.action, top, completion, rel))
            state_files[key] = {s: p for s, (_, p) in by_state.items()}
        return cls(
            instants,
            config.timeline_layout,
            storage=storage,
            timeline_path=config.timeline_path,
            state_files=state_files,
        )

    # -- views ------------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.instants)

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __repr__(self) -> str:
        return f"Timeline(layout={self.layout_version}, instants={len(self.instants)})"

    def _filter(self, pred: Callable[[Instant], bool]) -> list[Instant]:
        return [i for i in self.instants if pred(i)]

    def completed(self) -> list[Instant]:
        """Every completed instant, any action."""
        return self._filter(lambda i: i.is_completed)

    def completed_commits(self) -> list[Instant]:
        """Completed ``commit``, ``deltacommit`` and ``replacecommit`` instants (``getCommitsTimeline``)."""
        return self._filter(lambda i: i.is_completed and i.action in COMMIT_ACTIONS)

    def write_timeline(self) -> list[Instant]:
        """Write instants in any state (``getCommitsAndCompactionTimeline`` plus clustering)."""
        return self._filter(lambda i: i.action in WRITE_ACTIONS)

    def pending(self) -> list[Instant]:
        """Every instant that is not completed, any action."""
        return self._filter(lambda i: not i.is_completed)

    def pending_compactions(self) -> list[Instant]:
        """Requested or inflight compactions."""
        return self._filter(lambda i: i.action == COMPACTION and not i.is_completed)

    def pending_log_compactions(self) -> list[Instant]:
        """Requested or inflight log compactions."""
        return self._filter(lambda i: i.action == LOG_COMPACTION and not i.is_completed)

    def pending_clustering(self) -> list[Instant]:
        """Requested or inflight replace commits and (v8+) clustering instants."""
        return self._filter(lambda i: i.action in (REPLACE_COMMIT, CLUSTERING) and not i.is_completed)

    def inflight_writes(self) -> list[Instant]:
        """Requested or inflight ``deltacommit``/``commit`` instants (writes that have not completed)."""
        return self._filter(lambda i: i.action in (DELTA_COMMIT, COMMIT) and not i.is_completed)

    def last_completed_commit(self) -> Instant | None:
        """The last completed commit/deltacommit/replacecommit by requested time (the snapshot query time)."""
        commits = self.completed_commits()
        return commits[-1] if commits else None

    def is_completed_commit_time(self, t: str) -> bool:
        """Whether ``t`` is the requested time of a completed commit, deltacommit or replacecommit."""
        return any(i.is_completed and i.action in COMMIT_ACTIONS for i in self._by_time.get(t, ()))

    def is_before_timeline_start(self, t: str) -> bool:
        """Whether ``t`` predates the active timeline, so that it was archived and counts as committed.

        ``HoodieDefaultTimeline.isBeforeTimelineStarts`` over the file-system view's visible timeline (completed
        writes plus pending compactions): true when ``t`` is before its first instant, skipping savepointed ones.
        """
        savepoints = {i.time for i in self.instants if i.action == SAVEPOINT}
        for inst in self.instants:
            if inst.action not in WRITE_ACTIONS:
                continue
            if not (inst.is_completed or inst.action in (COMPACTION, LOG_COMPACTION)):
                continue
            if inst.time in savepoints:
                continue
            return t < inst.time
        return False

    def may_have_deleted_files_since(self, earlier: Timeline) -> bool:
        """Whether files that ``earlier``'s state needs may have been deleted by the time this (later) timeline was
        loaded: a clean, rollback or restore started or moved to another state since, or an instant of ``earlier``
        is gone (rolled back, restored, archived or unscheduled).

        A listing taken between the two loads may then lack files that ``earlier`` calls live: a view built from the
        pair would silently read less (``Table.view`` lists again with the later timeline).
        """
        before = {(i.time, i.action, i.state) for i in earlier.instants if i.action in FILE_DELETING_ACTIONS}
        if any((i.time, i.action, i.state) not in before for i in self.instants if i.action in FILE_DELETING_ACTIONS):
            return True
        return not {i.time for i in earlier.instants} <= {i.time for i in self.instants}

    def is_visible(self, t: str) -> bool:
        """Whether data written at instant ``t`` (a log block's ``INSTANT_TIME``, a base file's instant) counts.

        The one visibility rule every reader, the compaction task, the preview and the file-system view use: a
        completed commit/deltacommit/replacecommit, or an instant older than the active timeline (archived, so it
        completed). Failed and inflight writes stay invisible — even one older than the first completed commit, as
        Hudi's log reader checks the inflight timeline first (``AbstractHoodieLogRecordReader``; hudi-rs pass 1).
        """
        if self.is_completed_commit_time(t):
            return True
        if any(not i.is_completed for i in self._by_time.get(t, ())):
            return False
        return self.is_before_timeline_start(t)

    def completion_time(self, t: str) -> str | None:
        """Completion time of the completed instant requested at ``t`` (layout 2), else ``None``."""
        for inst in self._by_time.get(t, ()):
            if inst.is_completed and inst.completion_time is not None:
                return inst.completion_time
        return None

    def instant(self, time: str, action: str | None = None) -> Instant:
        """The instant requested at ``time`` (and of ``action`` or its comparable action, when given).

        Without ``action``, a write instant is preferred when several actions share the time.

        Raises:
            TimelineError: no such instant.
        """
        candidates = self._by_time.get(time, [])
        if action is not None:
            wanted = comparable_action(action)
            candidates = [i for i in candidates if i.comparable_action == wanted]
        if not candidates:
            what = f"{time}" + (f" ({action})" if action else "")
            raise TimelineError(f"instant {what} not found in {self.timeline_path}")
        writes = [i for i in candidates if i.action in WRITE_ACTIONS]
        return (writes or candidates)[0]

    # -- files and metadata -------------------------------------------------------------------------------------------
    def state_file(self, instant: Instant, state: InstantState | None = None) -> str | None:
        """Path (relative to the base path) of ``instant``'s file for ``state`` (default: its state), or ``None``."""
        st = instant.state if state is None else InstantState(state)
        return self._files.get((instant.time, instant.comparable_action), {}).get(st)

    def _expected_file(self, instant: Instant, state: InstantState) -> str:
        name = InstantFileName(instant.time, instant.action, state.value, instant.completion_time)
        return posixpath.join(self.timeline_path, name.name)

    def read_bytes(self, instant: Instant, state: InstantState | None = None) -> bytes:
        """Content of ``instant``'s file for ``state`` (default: its highest state).

        Raises:
            TimelineError: the file is missing or unreadable (named in the message).
        """
        st = instant.state if state is None else InstantState(state)
        rel = self.state_file(instant, st)
        if rel is None:
            raise TimelineError(f"{self._expected_file(instant, st)}: no {st.value} file for instant {instant.time}")
        if self._storage is None:
            raise TimelineError(f"{rel}: this timeline has no storage to read from")
        try:
            return self._storage.read_bytes(rel)
        except StorageError as exc:
            raise TimelineError(f"{rel}: {exc}") from exc

    def prefetch(self, instants: Iterable[Instant]) -> None:
        """Fetch the files of ``instants`` (highest state) in parallel before they are decoded one by one."""
        if self._storage is None:
            return
        rels = [
            rel for i in instants if (self.state_file(i) or "") not in self._commit_cache if (rel := self.state_file(i))
        ]
        self._storage.prefetch(rels)

    def _full(self, rel: str) -> str:
        return self._storage.full_path(rel) if self._storage is not None else rel

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        """Commit metadata of ``instant`` (completed file, or the inflight workload file when pending).

        Decoded once per file and cached.

        Raises:
            TimelineError: missing file; MetadataDecodeError: undecodable file.
        """
        rel = self.state_file(instant)
        if rel is None or rel not in self._commit_cache:
            data = self.read_bytes(instant)
            rel = self.state_file(instant)
            assert rel is not None
            self._commit_cache[rel] = CommitMetadata.from_record(decode_commit_metadata(data, self._full(rel)))
        return self._commit_cache[rel]

    def _plan_file(self, instant: Instant, actions: tuple[str, ...]) -> tuple[str, bytes]:
        rel = self.state_file(instant, InstantState.REQUESTED)
        parsed = InstantFileName.parse(posixpath.basename(rel)) if rel else None
        if rel is None or parsed is None or parsed.action not in actions:
            expected = posixpath.join(self.timeline_path, f"{instant.time}.{actions[0]}.requested")
            raise TimelineError(f"{expected}: not found for instant {instant.time} ({instant.action})")
        return rel, self.read_bytes(instant, InstantState.REQUESTED)

    def compaction_plan(self, instant: Instant) -> CompactionPlan:
        """The ``HoodieCompactionPlan`` of a (log) compaction instant, pending or completed.

        Read from ``<t>.compaction.requested`` (or ``.logcompaction.requested``), which stays on the timeline after
        the compaction completes as a ``commit``.

        Raises:
            TimelineError: the instant has no compaction plan file.
        """
        rel, data = self._plan_file(instant, (COMPACTION, LOG_COMPACTION))
        return CompactionPlan.from_record(decode_compaction_plan(data, self._full(rel)), instant.time)

    def replace_requested(self, instant: Instant) -> dict[str, Any]:
        """``HoodieRequestedReplaceMetadata`` of a replacecommit/clustering instant (``{}`` when the file is empty)."""
        rel, data = self._plan_file(instant, (REPLACE_COMMIT, CLUSTERING))
        return decode_replace_requested(data, self._full(rel))

    def clean_plan(self, instant: Instant) -> CleanPlan:
        """``HoodieCleanerPlan`` of a clean instant."""
        rel, data = self._plan_file(instant, (CLEAN,))
        return CleanPlan.from_record(decode_clean_plan(data, self._full(rel)))

    def clean_metadata(self, instant: Instant) -> CleanMetadata:
        """``HoodieCleanMetadata`` of a completed clean instant."""
        data = self.read_bytes(instant, InstantState.COMPLETED)
        rel = self.state_file(instant, InstantState.COMPLETED) or ""
        return CleanMetadata.from_record(decode_clean_metadata(data, self._full(rel)))

    def rollback_plan(self, instant: Instant) -> RollbackPlan:
        """``HoodieRollbackPlan`` of a rollback instant."""
        rel, data = self._plan_file(instant, (ROLLBACK,))
        return RollbackPlan.from_record(decode_rollback_plan(data, self._full(rel)))

    def pending_rollbacks(self) -> list[Instant]:
        """The rollback instants not completed (requested or inflight), by requested time."""
        return [i for i in self.instants if i.action == ROLLBACK and not i.is_completed]

    def pending_rollback_plans(self) -> list[tuple[Instant, RollbackPlan | None]]:
        """Each pending rollback with its plan (``None``: the plan cannot be read)."""
        out: list[tuple[Instant, RollbackPlan | None]] = []
        for inst in self.pending_rollbacks():
            try:
                out.append((inst, self.rollback_plan(inst)))
            except EvtError:
                out.append((inst, None))
        return out

    def pending_rollback_of(self, target: str) -> tuple[Instant, RollbackPlan] | None:
        """The pending rollback whose plan rolls back ``target``, with its plan (``None``: none is pending).

        A rollback killed half-way stays pending; rolling ``target`` back again resumes it. Its target may be gone
        from the timeline by then (a rollback removes its target's timeline files before it completes).

        Raises:
            MetadataDecodeError: the plan of a pending rollback is unreadable (names the file).
        """
        for inst in self.pending_rollbacks():
            plan = self.rollback_plan(inst)
            if plan.target == target:
                return inst, plan
        return None

    def rollback_overtaken_by(self, plan: RollbackPlan) -> tuple[Instant, ...]:
        """The instants that keep a pending rollback with ``plan`` from finishing, as the timeline stands (empty: it
        can finish).

        A rollback un-commits its target before it changes anything else, so only a rollback killed before that step
        can be overtaken, and it changed nothing. Its target still committed, it is overtaken by the completed
        compaction itself when the target was a compaction's run (run again to completion since; a completed
        compaction is never rolled back), and otherwise by every write instant after the deltacommit (only the last
        write can be rolled back; Hudi's ``validateRollbackCommitSequence``). Those instants keep it overtaken for
        as long as they are on the timeline: a compaction planned later is one of them, so the records of an
        overtaken rollback's target reach a base file only once the rollback can never finish.
        """
        found = [i for i in self.instants if i.time == plan.target and i.action in WRITE_ACTIONS]
        if not found or not found[0].is_completed:
            return ()
        current = found[0]
        if plan.action == COMPACTION or current.action != DELTA_COMMIT:
            return (current,)
        return tuple(i for i in self.instants if i.time > current.time and i.action in WRITE_ACTIONS)

    def rollback_metadata(self, instant: Instant) -> dict[str, Any]:
        """``HoodieRollbackMetadata`` of a completed rollback instant."""
        data = self.read_bytes(instant, InstantState.COMPLETED)
        return decode_rollback_metadata(data, self._full(self.state_file(instant, InstantState.COMPLETED) or ""))

    def replaced_file_groups(self, as_of: str | None = None) -> dict[tuple[str, str], str]:
        """File groups replaced by completed replace commits (clustering, insert overwrite).

        Like ``AbstractTableFileSystemView.getReplacedFileGroupsBeforeOrOn``: only replace commits requested at or
        before ``as_of`` count when it is given.

        Returns:
            ``(partition path, file id) -> requested time of the replacecommit``.
        """
        replaced: dict[tuple[str, str], str] = {}
        for inst in self.completed_commits():
            if inst.action != REPLACE_COMMIT or (as_of is not None and inst.time > as_of):
                continue
            meta = self.commit_metadata(inst)
            for partition, file_ids in meta.replaced_file_ids.items():
                for file_id in file_ids:
                    replaced[(partition, file_id)] = inst.time
        return replaced
