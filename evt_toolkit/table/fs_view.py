"""File-system view: file groups and file slices of a Hudi table, as Java's ``AbstractTableFileSystemView`` builds them.

Decisions mirrored from Hudi (see ``hudi-format.md`` §8 and the hudi-rs notes):

* A file group is ``(partition_path, file_id)``; a file slice is keyed by its *base instant*.
* Table version 6 (timeline layout 1): a log file's name carries the base instant of its slice; a pending compaction
  at ``C`` opens an empty slice at ``C`` for every file group in its plan, and a snapshot read merges that slice with
  the one before it (``getLatestMergedFileSlicesBeforeOrOn``). Base files written by a pending compaction are hidden.
* Table versions 8 and 9 (layout 2): a log file's name carries the requested time of the deltacommit that wrote it;
  it joins the slice with the greatest base instant ≤ the deltacommit's *completion* time, and within the slice
  logs replay by that name instant (``LogFileComparator``), not by completion time.
* Files written by instants that never completed are excluded (base files, and v8+ log files). On v6, log files of
  a committed slice stay listed and the reader skips their uncommitted blocks, as Java's log scanner does.
* File groups replaced by a completed replacecommit are hidden.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from evt_toolkit.format.names import BaseFileName, LogFileName
from evt_toolkit.storage.fs import FileEntry, TableStorage
from evt_toolkit.table.config import TableConfig
from evt_toolkit.table.timeline import Instant, Timeline

#: Base file extensions Hudi writes. Lance is listed so such tables are recognised (and then refused by the reader).
BASE_FILE_EXTENSIONS = (".parquet", ".orc", ".hfile", ".lance")
PARTITION_METAFILE = ".hoodie_partition_metadata"
HOODIE_FOLDER = ".hoodie"


@dataclass(frozen=True, slots=True)
class BaseFile:
    """A base (columnar) file of a file slice."""

    path: str  # relative to the table base path
    name: str
    file_id: str
    instant: str
    write_token: str
    size: int


@dataclass(frozen=True, slots=True)
class LogFile:
    """A log file of a file slice.

    ``instant`` is the instant in the file name: the slice's base instant on table v6, the writing deltacommit's
    requested time on v8+.
    """

    path: str
    name: str
    file_id: str
    instant: str
    version: int
    write_token: str | None
    suffix: str
    size: int

    def sort_key(self) -> tuple[str, int, str, str]:
        """Hudi's ``HoodieLogFile.LogFileComparator``: base instant, version, write token, suffix."""
        return (self.instant, self.version, self.write_token or "", self.suffix)


@dataclass(frozen=True, slots=True)
class FileSlice:
    """One base file (or none) plus the log files written on top of it, oldest log first."""

    partition_path: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None
    log_files: tuple[LogFile, ...]

    @property
    def total_log_size(self) -> int:
        return sum(lf.size for lf in self.log_files)

    @property
    def total_size(self) -> int:
        return (self.base_file.size if self.base_file else 0) + self.total_log_size


@dataclass(slots=True)
class _GroupBuilder:
    partition_path: str
    file_id: str
    base_files: list[BaseFile] = field(default_factory=list)
    log_files: list[LogFile] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FileGroup:
    """All slices of one file group, newest slice first."""

    partition_path: str
    file_id: str
    slices: tuple[FileSlice, ...]


@dataclass(frozen=True, slots=True)
class Listing:
    """Raw storage listing of a table's data files (the input of a view)."""

    partitions: tuple[str, ...]
    base_files: tuple[BaseFile, ...]
    log_files: tuple[tuple[str, LogFile], ...]  # (partition_path, log file)


def list_table_files(storage: TableStorage) -> Listing:
    """List every partition and its base and log files, skipping ``.hoodie``.

    As in Hudi (``FileSystemBackedTableMetadata``), every other folder is looked into: a partition's folder may
    start with ``_`` or ``.`` — a null value's ``__HIVE_DEFAULT_PARTITION__`` without hive-style names, or a value
    such as ``_x``. Below such a name (``_temporary``, ``.spark-staging``, ...) a folder is a partition only when it
    holds ``.hoodie_partition_metadata``, as Hudi decides, so a job's staged files are never read as data.

    Folders are listed level by level; on object stores the folders of one level are listed in parallel
    (``TableStorage.parallel``), so a table of many partitions costs about one round trip per level, not per folder.
    """
    listed: dict[str, list[FileEntry]] = {}
    hidden: set[str] = set()
    level = [""]
    while level:
        if storage.is_object_store and len(level) > 1:
            results = storage.parallel(storage.list_dir, level)
        else:
            results = [storage.list_dir(rel) for rel in level]
        following: list[str] = []
        for rel, (files, dirs) in zip(level, results, strict=True):
            listed[rel] = files
            for d in dirs:
                name = d.rsplit("/", 1)[-1]
                if name == HOODIE_FOLDER:
                    continue  # the timeline and the metadata table
                if rel in hidden or name.startswith((".", "_")):
                    hidden.add(d)
                following.append(d)
        level = following
    return _listing(listed, hidden)


def list_partition_files(storage: TableStorage, partitions: Sequence[str]) -> Listing:
    """The base and log files of ``partitions`` only (one listing each, in parallel on object stores): what a view
    of those partitions' file groups needs, without listing the rest of the table."""
    wanted = sorted(set(partitions))
    if storage.is_object_store and len(wanted) > 1:
        results = storage.parallel(storage.list_dir, wanted)
    else:
        results = [storage.list_dir(rel) for rel in wanted]
    return _listing({rel: files for rel, (files, _) in zip(wanted, results, strict=True)}, set())


def _listing(listed: dict[str, list[FileEntry]], hidden: set[str]) -> Listing:
    """The partitions, base and log files of listed folders; a folder in ``hidden`` (a name starting with ``_`` or
    ``.`` on its path) counts only when it holds the partition metafile, and its data files only then."""
    partitions: list[str] = []
    base_files: list[BaseFile] = []
    log_files: list[tuple[str, LogFile]] = []
    for rel in sorted(listed):
        has_data = False
        # Hudi also names it .hoodie_partition_metadata.parquet (or .orc) when it uses the base file format.
        is_partition = any(entry.name.startswith(PARTITION_METAFILE) for entry in listed[rel])
        if rel in hidden and not is_partition:
            continue
        for entry in listed[rel]:
            parsed = _parse_data_file(rel, entry)
            if isinstance(parsed, BaseFile):
                base_files.append(parsed)
                has_data = True
            elif isinstance(parsed, LogFile):
                log_files.append((rel, parsed))
                has_data = True
        if is_partition or has_data:
            partitions.append(rel)
    return Listing(tuple(sorted(partitions)), tuple(base_files), tuple(log_files))


def _parse_data_file(partition: str, entry: FileEntry) -> BaseFile | LogFile | None:
    if entry.name.startswith("."):
        log = LogFileName.parse(entry.name)
        # Only ".log" files are data (".archive" belongs to the archived timeline); CDC logs are not slices' data.
        if log is None or log.extension != "log" or log.suffix:
            return None
        return LogFile(
            entry.path, entry.name, log.file_id, log.base_instant, log.version, log.write_token, log.suffix, entry.size
        )
    if not entry.name.endswith(BASE_FILE_EXTENSIONS):
        return None
    base = BaseFileName.parse(entry.name)
    if base is None:
        return None
    return BaseFile(entry.path, entry.name, base.file_id, base.instant, base.write_token, entry.size)


class FileSystemView:
    """File groups and slices of a table at a point of its timeline.

    Args:
        config: the table's configuration.
        timeline: the loaded timeline.
        listing: the storage listing (see :func:`list_table_files`).
    """

    def __init__(self, config: TableConfig, timeline: Timeline, listing: Listing) -> None:
        self.config = config
        self.timeline = timeline
        self.listing = listing
        self._pending_compaction_ops = self._load_pending_compaction_operations()

    # -- pending compaction ------------------------------------------------------------------
    def _load_pending_compaction_operations(self) -> dict[tuple[str, str], Instant]:
        ops: dict[tuple[str, str], Instant] = {}
        for inst in self.timeline.pending_compactions():
            plan = self.timeline.compaction_plan(inst)
            for op in plan.operations:
                ops[(op.partition_path, op.file_id)] = inst
        return ops

    @property
    def pending_compaction_operations(self) -> dict[tuple[str, str], Instant]:
        """``(partition, file_id) -> pending compaction instant`` for every file group in a pending plan."""
        return dict(self._pending_compaction_ops)

    # -- committed-ness ------------------------------------------------------------------------
    def _is_committed(self, instant: str, as_of: str | None) -> bool:
        if as_of is not None and instant > as_of:
            return False
        return self.timeline.is_visible(instant)

    # -- building ----------------------------------------------------------------------------------
    def file_groups(self, as_of: str | None = None, *, include_pending_compaction: bool = True) -> list[FileGroup]:
        """Every visible file group with its committed slices (newest first) as of ``as_of`` (or latest)."""
        builders: dict[tuple[str, str], _GroupBuilder] = {}

        def builder(partition: str, file_id: str) -> _GroupBuilder:
            key = (partition, file_id)
            if key not in builders:
                builders[key] = _GroupBuilder(partition, file_id)
            return builders[key]

        for bf in self.listing.base_files:
            partition = bf.path.rsplit("/", 1)[0] if "/" in bf.path else ""
            builder(partition, bf.file_id).base_files.append(bf)
        for partition, lf in self.listing.log_files:
            builder(partition, lf.file_id).log_files.append(lf)

        replaced = self.timeline.replaced_file_groups(as_of)
        pending = self._pending_compaction_ops if include_pending_compaction else {}
        groups: list[FileGroup] = []
        for key in sorted(builders):
            if key in replaced:
                continue
            b = builders[key]
            pending_instant = pending.get(key)
            if pending_instant is not None and as_of is not None and pending_instant.time > as_of:
                pending_instant = None
            slices = (
                self._slices_v6(b, as_of, pending_instant)
                if self.config.timeline_layout == 1
                else self._slices_v8(b, as_of)
            )
            if slices:
                groups.append(FileGroup(b.partition_path, b.file_id, tuple(slices)))
        return groups

    def _slices_v6(self, b: _GroupBuilder, as_of: str | None, pending: Instant | None) -> list[FileSlice]:
        bases: dict[str, BaseFile] = {}
        for bf in b.base_files:
            # Output of a pending compaction is not part of any slice until the compaction commits.
            if pending is not None and bf.instant == pending.time:
                continue
            if self._is_committed(bf.instant, as_of):
                current = bases.get(bf.instant)
                # Two base files for one instant happen after a retried task; Java keeps the last listed one.
                if current is None or bf.name > current.name:
                    bases[bf.instant] = bf
        logs: dict[str, list[LogFile]] = {}
        for lf in b.log_files:
            if (pending is not None and lf.instant == pending.time) or self._is_committed(lf.instant, as_of):
                logs.setdefault(lf.instant, []).append(lf)
        slice_instants = set(bases) | set(logs)
        if pending is not None:
            slice_instants.add(pending.time)  # addNewFileSliceAtInstant
        return [
            FileSlice(
                b.partition_path,
                b.file_id,
                inst,
                bases.get(inst),
                tuple(sorted(logs.get(inst, []), key=LogFile.sort_key)),
            )
            for inst in sorted(slice_instants, reverse=True)
        ]

    def _slices_v8(self, b: _GroupBuilder, as_of: str | None) -> list[FileSlice]:
        bases: dict[str, BaseFile] = {}
        for bf in b.base_files:
            if self._is_committed(bf.instant, as_of):
                current = bases.get(bf.instant)
                if current is None or bf.name > current.name:
                    bases[bf.instant] = bf
        slice_keys = sorted(bases, reverse=True)
        logs: dict[str, list[LogFile]] = {k: [] for k in slice_keys}

        def completion_of(lf: LogFile) -> str:
            return self.timeline.completion_time(lf.instant) or lf.instant

        for lf in sorted(b.log_files, key=lambda f: (completion_of(f), f.version, f.write_token or "")):
            if not self._is_committed(lf.instant, as_of):
                continue
            completed = completion_of(lf)
            # HoodieFileGroup.getBaseInstantTime: the greatest slice key <= the log's completion time,
            # else the log's own instant opens a slice.
            target = next((k for k in slice_keys if k <= completed), None)
            if target is None:
                target = lf.instant
                slice_keys.append(target)
                slice_keys.sort(reverse=True)
                logs[target] = []
            logs[target].append(lf)

        # Within a slice, logs replay in HoodieLogFile.LogFileComparator order — the instant in the name (the
        # deltacommit's requested time), then version, write token, suffix — as Java's HoodieFileGroupReader
        # (InputSplit) and hudi-rs (reader_v2 InputSplit) sort them. Completion time only picks the slice: two
        # overlapping deltacommits replay by requested time even when the earlier one completed later.
        return [
            FileSlice(
                b.partition_path, b.file_id, k, bases.get(k), tuple(sorted(logs.get(k, []), key=LogFile.sort_key))
            )
            for k in slice_keys
        ]

    # -- the slices readers use -------------------------------------------------------------------
    def latest_file_slices(self, as_of: str | None = None) -> list[FileSlice]:
        """The latest slice of every file group (``getLatestFileSlices``), pending-compaction slices unmerged."""
        return [g.slices[0] for g in self.file_groups(as_of)]

    def latest_merged_file_slices(self, as_of: str | None = None) -> list[FileSlice]:
        """What snapshot readers use (``getLatestMergedFileSlicesBeforeOrOn``).

        When the latest slice is the empty slice a pending compaction opened, it is merged with the slice before
        it: that slice's base file, its logs, then the new slice's logs.
        """
        out: list[FileSlice] = []
        for g in self.file_groups(as_of):
            latest = g.slices[0]
            pending = self._pending_compaction_ops.get((g.partition_path, g.file_id))
            if (
                pending is not None
                and latest.base_instant == pending.time
                and (as_of is None or pending.time <= as_of)
                and len(g.slices) > 1
            ):
                prev = g.slices[1]
                latest = FileSlice(
                    g.partition_path,
                    g.file_id,
                    prev.base_instant,
                    prev.base_file,
                    prev.log_files + latest.log_files,
                )
            out.append(latest)
        return out

    def latest_base_files(self, as_of: str | None = None) -> list[BaseFile]:
        """Read-optimized view: the latest committed base file of each group (log-only groups give nothing)."""
        out: list[BaseFile] = []
        for g in self.file_groups(as_of):
            for s in g.slices:
                if s.base_file is not None:
                    out.append(s.base_file)
                    break
        return out


def iter_all_slices(groups: Iterable[FileGroup]) -> Iterable[FileSlice]:
    for g in groups:
        yield from g.slices
