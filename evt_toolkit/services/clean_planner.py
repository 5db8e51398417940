"""Deciding what a clean deletes: Hudi's cleaner policies, plus the links of partial compaction. Pure, no I/O.

Mirrors ``CleanPlanner`` and ``CleanerUtils.getEarliestCommitToRetain`` of Hudi 0.14/0.15 (``hudi-format.md`` §10):

* **KEEP_LATEST_COMMITS** (retained ``N``): the *earliest commit to retain* (ECTR) is the ``count − N``-th completed
  commit (0-based) of the commits timeline, clamped to be no later than the earliest pending write or compaction.
  Per file group, a slice is deleted when its base instant is before the ECTR, unless it is the latest slice, the
  latest slice before the ECTR (a query at the ECTR still reads it) or a slice a pending compaction needs.
* **KEEP_LATEST_FILE_VERSIONS** (retained ``N``): per file group, slices needed by a pending compaction are set
  aside and kept; of the others the ``N`` newest are kept (``N − 1`` when the group is in a pending compaction, whose
  old slice already is one version kept) and the rest deleted. Unlike Java, the latest slice is never deleted: with
  ``N = 1`` and a pending compaction Java would delete the slice the compaction opened, and with it any log a writer
  has put there since scheduling.
* Deleting a slice means its base file and all its log files.

Then the links (:mod:`evt_toolkit.table.links`): a file that a surviving symlink-mode link needs for its bytes is
taken off the list, following chains of links across compactions, until nothing that stays depends on anything that
goes. Copy-mode links hold their own bytes, so what they were copied from is cleanable like any old slice.

Not covered, by decision: file groups replaced by a ``replacecommit`` (this toolkit writes none, and the file-system
view hides them, so they are left alone rather than deleted), savepoints (refused by the executor) and
``KEEP_LATEST_BY_HOURS``.

Example:
    >>> ectr = earliest_commit_to_retain([("1", "deltacommit"), ("2", "deltacommit"), ("3", "commit")], [], 2)
    >>> ectr
    InstantRef(time='2', action='deltacommit')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from evt_toolkit.errors import CleanPolicyError
from evt_toolkit.table.fs_view import FileGroup, FileSlice
from evt_toolkit.table.links import LinkGraph

__all__ = [
    "DEFAULT_COMMITS_RETAINED",
    "DEFAULT_FILE_VERSIONS_RETAINED",
    "KEEP_LATEST_COMMITS",
    "KEEP_LATEST_FILE_VERSIONS",
    "POLICIES",
    "CleanFile",
    "CleanInputs",
    "CleanPlan",
    "CleanPolicyError",
    "InstantRef",
    "check_clean_policy",
    "earliest_commit_to_retain",
    "plan_clean",
]

KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
POLICIES = (KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS)
#: ``hoodie.cleaner.commits.retained`` default.
DEFAULT_COMMITS_RETAINED = 10
#: ``hoodie.cleaner.fileversions.retained`` default.
DEFAULT_FILE_VERSIONS_RETAINED = 3


@dataclass(frozen=True, slots=True)
class InstantRef:
    """An instant by requested time and action (``HoodieActionInstant`` without the state)."""

    time: str
    action: str


@dataclass(frozen=True, slots=True)
class CleanFile:
    """One file a clean deletes.

    Attributes:
        partition_path: its partition (``""`` when not partitioned).
        path: relative to the table base path.
        file_id: its file group.
        base_instant: the base instant of the slice it belongs to.
    """

    partition_path: str
    path: str
    file_id: str
    base_instant: str


@dataclass(frozen=True, slots=True)
class CleanInputs:
    """Everything the planner looks at, gathered by the executor from the table.

    Attributes:
        groups: every visible file group with all its committed slices, newest first (the pending compaction's
            empty slice included, as ``AbstractTableFileSystemView`` builds it).
        completed_commits: completed ``commit``/``deltacommit``/``replacecommit`` instants in timeline order.
        pending_writes: requested times of every pending instant of the commits-and-compaction timeline (inflight
            writes, pending compactions and log compactions, pending replace commits).
        pending_compaction_slices: ``(partition, file_id) -> base instant`` of the slice each pending (log)
            compaction operation reads (``isFileSliceNeededForPendingMajorOrMinorCompaction``).
        links: every known link (plans, commits, storage).
        existing_files: every data file on storage (relative paths), in a slice or not: a link outside every slice
            still needs its target.
    """

    groups: Sequence[FileGroup]
    completed_commits: Sequence[InstantRef]
    pending_writes: Sequence[str]
    pending_compaction_slices: Mapping[tuple[str, str], str]
    links: LinkGraph
    existing_files: frozenset[str]


@dataclass(frozen=True, slots=True)
class CleanPlan:
    """What a clean deletes.

    Attributes:
        policy: the cleaner policy.
        retained: commits (KEEP_LATEST_COMMITS) or file versions (KEEP_LATEST_FILE_VERSIONS) retained.
        earliest_commit_to_retain: KEEP_LATEST_COMMITS only; ``None`` when there are not more than ``retained``
            completed commits (then nothing is cleaned) or for KEEP_LATEST_FILE_VERSIONS (as in Hudi).
        last_completed_commit: requested time of the last completed commit, ``None`` on an empty timeline.
        files: the files to delete, sorted by path.
        kept_for_links: files the policy would delete but a surviving symlink needs (directly or along a chain).
        earliest_queryable: the earliest instant a time-travel query can still be answered at once the files are
            gone (``None`` when nothing is deleted); never later than the ECTR.
    """

    policy: str
    retained: int
    earliest_commit_to_retain: InstantRef | None
    last_completed_commit: str | None
    files: tuple[CleanFile, ...]
    kept_for_links: tuple[str, ...]
    earliest_queryable: str | None

    @property
    def paths(self) -> tuple[str, ...]:
        """The files to delete, relative to the base path, sorted."""
        return tuple(f.path for f in self.files)

    @property
    def is_empty(self) -> bool:
        """Nothing to delete (Hudi then writes no clean instant)."""
        return not self.files

    def by_partition(self) -> dict[str, list[CleanFile]]:
        """The files per partition, partitions sorted."""
        out: dict[str, list[CleanFile]] = {}
        for f in sorted(self.files, key=lambda x: (x.partition_path, x.path)):
            out.setdefault(f.partition_path, []).append(f)
        return out


def earliest_commit_to_retain(
    completed_commits: Sequence[tuple[str, str]] | Sequence[InstantRef],
    pending_writes: Iterable[str],
    retained: int,
) -> InstantRef | None:
    """``CleanerUtils.getEarliestCommitToRetain`` for KEEP_LATEST_COMMITS.

    Args:
        completed_commits: ``(time, action)`` or :class:`InstantRef`, in timeline order.
        pending_writes: requested times of pending instants of the commits-and-compaction timeline.
        retained: ``hoodie.cleaner.commits.retained``.

    Returns:
        ``None`` when there are at most ``retained`` completed commits, or when every one of them that could be
        the ECTR is after the earliest pending instant with none before it.
    """
    commits = [c if isinstance(c, InstantRef) else InstantRef(c[0], c[1]) for c in completed_commits]
    if len(commits) <= retained:
        return None
    nth = commits[len(commits) - retained]
    pending = min(pending_writes, default=None)
    if pending is None or nth.time <= pending:
        return nth
    # The ECTR must not pass a pending instant: a write still inflight (or a compaction still to run) will add
    # slices whose readers need what came before it.
    before = [c for c in commits if c.time < pending]
    return before[-1] if before else None


def _slice_files(s: FileSlice) -> list[CleanFile]:
    out = []
    if s.base_file is not None:
        out.append(CleanFile(s.partition_path, s.base_file.path, s.file_id, s.base_instant))
    out.extend(CleanFile(s.partition_path, lf.path, s.file_id, s.base_instant) for lf in s.log_files)
    return out


def _needed_by_pending(g: FileGroup, s: FileSlice, pending: Mapping[tuple[str, str], str]) -> bool:
    return pending.get((g.partition_path, g.file_id)) == s.base_instant


def _keep_latest_commits(
    g: FileGroup, ectr: InstantRef, pending: Mapping[tuple[str, str], str]
) -> tuple[list[FileSlice], list[FileSlice]]:
    latest = g.slices[0].base_instant
    # getLatestVersionBeforeCommit: slices are newest first, so the first one strictly before the ECTR.
    before = next((s.base_instant for s in g.slices if s.base_instant < ectr.time), None)
    keep: list[FileSlice] = []
    delete: list[FileSlice] = []
    for s in g.slices:
        if s.base_instant in (latest, before) or _needed_by_pending(g, s, pending) or s.base_instant >= ectr.time:
            keep.append(s)
        else:
            delete.append(s)
    return keep, delete


def _keep_latest_versions(
    g: FileGroup, retained: int, pending: Mapping[tuple[str, str], str]
) -> tuple[list[FileSlice], list[FileSlice]]:
    keep = [s for s in g.slices if _needed_by_pending(g, s, pending)]
    candidates = [s for s in g.slices if not _needed_by_pending(g, s, pending)]
    versions = retained - (1 if (g.partition_path, g.file_id) in pending else 0)
    # Never the latest slice (see the module notes: Java's N = 1 with a pending compaction would delete it).
    versions = max(versions, 1 if candidates and candidates[0] is g.slices[0] else 0)
    keep.extend(candidates[:versions])
    return keep, candidates[versions:]


def check_clean_policy(policy: str, retained: int) -> None:
    """Refuse an unknown policy or ``retained`` < 1 (``CleanPolicyError``)."""
    if policy not in POLICIES:
        raise CleanPolicyError(f"unknown or unsupported cleaner policy {policy!r}; expected one of {POLICIES}")
    if retained < 1:
        raise CleanPolicyError(f"retained must be at least 1 for {policy}, got {retained}")


def plan_clean(inputs: CleanInputs, policy: str, retained: int) -> CleanPlan:
    """Plan a clean.

    Args:
        inputs: the table facts (see :class:`CleanInputs`).
        policy: ``KEEP_LATEST_COMMITS`` or ``KEEP_LATEST_FILE_VERSIONS``.
        retained: commits or file versions retained (≥ 1).

    Raises:
        CleanPolicyError: unknown policy, or ``retained`` < 1.
    """
    check_clean_policy(policy, retained)
    last = inputs.completed_commits[-1].time if inputs.completed_commits else None
    ectr: InstantRef | None = None
    if policy == KEEP_LATEST_COMMITS:
        ectr = earliest_commit_to_retain(inputs.completed_commits, inputs.pending_writes, retained)
        if ectr is None:
            return CleanPlan(policy, retained, None, last, (), (), None)

    doomed: dict[str, CleanFile] = {}
    oldest_kept_after: dict[tuple[str, str], tuple[str, list[FileSlice]]] = {}
    for g in inputs.groups:
        if not g.slices:
            continue
        if ectr is not None:
            keep, delete = _keep_latest_commits(g, ectr, inputs.pending_compaction_slices)
        else:
            keep, delete = _keep_latest_versions(g, retained, inputs.pending_compaction_slices)
        if not delete:
            continue
        for s in delete:
            for f in _slice_files(s):
                doomed[f.path] = f
        oldest_kept_after[(g.partition_path, g.file_id)] = (max(s.base_instant for s in delete), keep)

    # Links: take back whatever a surviving file needs, until the surviving set is closed under "needs".
    rescued: set[str] = set()
    while True:
        surviving_links = [p for p in inputs.links.links if p in inputs.existing_files and p not in doomed]
        needed = inputs.links.needed_by(surviving_links) & doomed.keys()
        if not needed:
            break
        for p in needed:
            doomed.pop(p)
        rescued.update(needed)

    # Time travel: at an instant before the oldest kept slice that follows a deleted one, a query would need
    # the deleted slice.
    bounds = []
    for newest_deleted, keep in oldest_kept_after.values():
        later = [s.base_instant for s in keep if s.base_instant > newest_deleted]
        if later:
            bounds.append(min(later))
    earliest_queryable = max(bounds) if bounds and doomed else None
    files = tuple(sorted(doomed.values(), key=lambda f: f.path))
    return CleanPlan(policy, retained, ectr, last, files, tuple(sorted(rescued)), earliest_queryable)
