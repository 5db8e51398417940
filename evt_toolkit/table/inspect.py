"""``table.inspect``: metadata views of a table as Arrow tables with declared schemas (pyiceberg's ``inspect``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Literal

import pyarrow as pa

from evt_toolkit.errors import EvtError
from evt_toolkit.format.eventtime import EpochUnit, event_time_stats
from evt_toolkit.format.extra_metadata import DeleteEventTimes
from evt_toolkit.format.log_content import decode_data_block, read_block_records
from evt_toolkit.format.logfile import READ_AHEAD, BlockType, HeaderKey, LogBlock, scan_log_blocks
from evt_toolkit.storage.log_blocks import small_log_bytes
from evt_toolkit.table.table import listed_files_may_be_gone
from evt_toolkit.table.write_stats import delete_event_time_index, log_event_time_index

if TYPE_CHECKING:
    from evt_toolkit.table.fs_view import LogFile
    from evt_toolkit.table.table import Table

LOG_BLOCKS_SCHEMA = pa.schema(
    [
        pa.field("partition_path", pa.string()),
        pa.field("file_id", pa.string()),
        pa.field("log_file", pa.string()),
        pa.field("version", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("size", pa.int64()),
        pa.field("block_type", pa.string()),
        pa.field("instant_time", pa.string()),
        pa.field("target_instant_time", pa.string()),
        pa.field("header", pa.map_(pa.string(), pa.string())),
        pa.field("committed", pa.bool_()),
        pa.field("corrupt_reason", pa.string()),
        pa.field("record_count", pa.int64()),
        pa.field("min_event_time", pa.int64()),
        pa.field("min_event_time_source", pa.string()),
        pa.field("event_time_null_count", pa.int64()),
    ]
)
"""Columns of :meth:`Inspect.log_blocks`. ``min_event_time`` is epoch milliseconds; its source is ``header``
(the ``MIN_EVENT_TIME`` block header), ``write_stats`` (``minEventTime`` of the writing commit's stat for this log
file) or ``scan`` (decoded event-time column), null when no event-time field is known or the block has no data."""


@dataclass(frozen=True, slots=True)
class MinEventTime:
    value: int | None
    source: str | None
    null_count: int | None


class Inspect:
    """Metadata views of one table."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._scan_cache: dict[tuple[str, int, int, str, str], MinEventTime] = {}
        self._deletes: _LazyDeletes | None = None

    def log_blocks(
        self,
        partition: str | None = None,
        file_id: str | None = None,
        *,
        event_time_field: str | None = None,
        event_time_unit: EpochUnit | None = None,
        all_slices: bool = False,
    ) -> pa.Table:
        """Every log block of the latest file slices (or of all slices), headers only unless a scan is needed.

        Args:
            partition: only this partition path.
            file_id: only this file group.
            event_time_field: field whose minimum is reported; defaults to ``hoodie.payload.event.time.field``.
            event_time_unit: unit of integer epoch event times (default: the table's, else milliseconds).
            all_slices: include older slices too.

        Example:
            >>> t = Table.open("/data/trips")  # doctest: +SKIP
            >>> t.inspect.log_blocks().select(["log_file", "block_type", "min_event_time"])  # doctest: +SKIP
        """
        t = self._table
        logs = [
            (g.partition_path, lf)
            for g in t.view.file_groups()
            if (partition is None or g.partition_path == partition) and (file_id is None or g.file_id == file_id)
            for s in (g.slices if all_slices else g.slices[:1])
            for lf in s.log_files
        ]
        return self.log_file_blocks(logs, event_time_field=event_time_field, event_time_unit=event_time_unit)

    def log_file_blocks(
        self,
        log_files: Sequence[tuple[str, LogFile]],
        *,
        event_time_field: str | None = None,
        event_time_unit: EpochUnit | None = None,
    ) -> pa.Table:
        """:meth:`log_blocks` of exactly these ``(partition path, log file)`` pairs, in the order given.

        The logs are fetched together first (object stores: in parallel, one GET per log file), then parsed from
        memory.
        """
        t = self._table
        field = event_time_field or t.config.event_time_field
        unit = event_time_unit or t.config.event_time_unit
        rows: dict[str, list[object]] = {f.name: [] for f in LOG_BLOCKS_SCHEMA}
        # MIN_EVENT_TIME headers, minEventTime write stats and the recorded delete event times describe the field the
        # writers track, the table's own; a reader asking about another field must read that field's values.
        recorded = field is not None and field == t.config.event_time_field
        stats = _LazyIndex(t, "minEventTime" if recorded else None)
        self._deletes = _LazyDeletes(t) if recorded else None
        with listed_files_may_be_gone():
            t.storage.prefetch(lf.path for _, lf in log_files)
            heads = small_log_bytes(t.storage, [(lf.path, lf.size) for _, lf in log_files])
            for (partition_path, lf), data in zip(log_files, heads, strict=True):
                self._log_blocks_of(rows, partition_path, lf, field, unit, stats, recorded, data)
        return pa.table(rows, schema=LOG_BLOCKS_SCHEMA)

    def _log_blocks_of(
        self,
        rows: dict[str, list[object]],
        partition_path: str,
        lf: LogFile,
        field: str | None,
        unit: EpochUnit,
        stats: _LazyIndex,
        recorded: bool,
        data: bytes | None,
    ) -> None:
        """Append the blocks of one log file to ``rows``; ``data``: its bytes when read already
        (:func:`~evt_toolkit.storage.log_blocks.small_log_bytes`)."""
        if data is not None and len(data) == lf.size:
            self._append_blocks(rows, partition_path, lf, data, field, unit, stats, recorded)
            return
        with self._table.storage.open_input(lf.path) as f:
            # A small log is read whole, in one call: the scan, the record counts and any fallback
            # decode then work on those bytes (as scan_log_blocks does itself for small files).
            src: BinaryIO | bytes = f
            if lf.size <= READ_AHEAD:
                head = f.read(lf.size)
                if len(head) == lf.size:
                    src = head
            self._append_blocks(rows, partition_path, lf, src, field, unit, stats, recorded)

    def _append_blocks(
        self,
        rows: dict[str, list[object]],
        partition_path: str,
        lf: LogFile,
        src: BinaryIO | bytes,
        field: str | None,
        unit: EpochUnit,
        stats: _LazyIndex,
        recorded: bool,
    ) -> None:
        for blk in scan_log_blocks(src, lf.size, lf.path):
            met = self._min_event_time(src, lf, blk, field, unit, stats, recorded)
            count = _record_count(src, blk) if blk.is_data else None
            self._append(rows, partition_path, lf, blk, met, count)

    def _append(
        self,
        rows: dict[str, list[object]],
        partition: str,
        lf: LogFile,
        blk: LogBlock,
        met: MinEventTime,
        count: int | None,
    ) -> None:
        t = self._table
        inst = blk.instant_time
        committed = None if inst is None else t.timeline.is_visible(inst)
        header = [(_header_name(k), v) for k, v in blk.header.items()]
        values: dict[str, object] = {
            "partition_path": partition,
            "file_id": lf.file_id,
            "log_file": lf.name,
            "version": lf.version,
            "offset": blk.offset,
            "size": blk.size,
            "block_type": _BLOCK_TYPE_NAMES[blk.block_type],
            "instant_time": inst,
            "target_instant_time": blk.target_instant_time,
            "header": header,
            "committed": committed,
            "corrupt_reason": blk.corrupt_reason,
            "record_count": count,
            "min_event_time": met.value,
            "min_event_time_source": met.source,
            "event_time_null_count": met.null_count,
        }
        for k, v in values.items():
            rows[k].append(v)

    def _min_event_time(
        self,
        f: BinaryIO | bytes,
        lf: LogFile,
        blk: LogBlock,
        field: str | None,
        unit: EpochUnit,
        stats: _LazyIndex,
        recorded: bool = True,
    ) -> MinEventTime:
        if blk.block_type == BlockType.DELETE:
            # A delete block has no event-time column: the writer records the deleted records' event times, when it
            # knew them, beside the write stats (evt.write.delete_event_times); otherwise they are unknown.
            d = self._deletes.get((lf.name, blk.instant_time or "")) if field and self._deletes is not None else None
            if d is None or not d.known:
                return MinEventTime(None, None, None)
            return MinEventTime(d.min_ms, "write_stats", None)
        if not blk.is_data or blk.block_type == BlockType.CDC_DATA:
            return MinEventTime(None, None, None)
        header_value = blk.min_event_time_header if recorded else None
        if header_value is not None:
            return MinEventTime(header_value, "header", None)
        if not field:
            return MinEventTime(None, None, None)
        ws = stats.get((lf.name, blk.instant_time or ""))
        if ws is not None:
            return MinEventTime(ws, "write_stats", None)
        key = (lf.name, lf.size, blk.offset, field, unit)  # one scan per block, field and unit
        cached = self._scan_cache.get(key)
        if cached is not None:
            return cached
        try:
            if isinstance(f, bytes):
                records = decode_data_block(blk, f[blk.content_offset : blk.content_offset + blk.content_length])
            else:
                records = read_block_records(f, blk)
        except EvtError:
            return MinEventTime(None, None, None)
        if field not in records.column_names:
            met = MinEventTime(None, None, None)
        else:
            st = event_time_stats(records[field], unit, field=field)
            met = MinEventTime(st.min_ms, "scan", st.null_count)
        self._scan_cache[key] = met
        return met


# Enum.name is a descriptor call; a scan of a million blocks looks these up a few million times.
_BLOCK_TYPE_NAMES = {t: t.name for t in BlockType}
_HEADER_NAMES = {k: k.name for k in HeaderKey}


def _header_name(key: object) -> str:
    name = _HEADER_NAMES.get(key)  # type: ignore[call-overload]
    return name if name is not None else str(key)


def _record_count(f: BinaryIO | bytes, blk: LogBlock) -> int | None:
    """Record count without decoding: Avro blocks carry it right after the content version."""
    if blk.block_type != BlockType.AVRO_DATA or blk.content_length < 8:
        return None
    if isinstance(f, bytes):
        raw = f[blk.content_offset + 4 : blk.content_offset + 8]
    else:
        f.seek(blk.content_offset + 4)
        raw = f.read(4)
    return int.from_bytes(raw, "big", signed=True) if len(raw) == 4 else None


class _LazyDeletes:
    """The deleted records' event times per (log, instant), built only when a delete block first needs them."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._index: dict[tuple[str, str], DeleteEventTimes] | None = None

    def get(self, key: tuple[str, str]) -> DeleteEventTimes | None:
        if self._index is None:
            self._index = delete_event_time_index(self._table.timeline)
        return self._index.get(key)


class _LazyIndex:
    """The write-stat index of one event-time statistic, built only when a block first needs it.

    Logs written with the ``MIN_EVENT_TIME`` header never need it, and building it reads the commit metadata of
    the whole timeline.
    """

    def __init__(self, table: Table, stat: Literal["minEventTime", "maxEventTime"] | None) -> None:
        self._table = table
        self._stat = stat
        self._index: dict[tuple[str, str], int] | None = None

    def get(self, key: tuple[str, str]) -> int | None:
        if self._stat is None:
            return None
        if self._index is None:
            self._index = log_event_time_index(self._table.timeline, self._stat)
        return self._index.get(key)


def schema_summary(schema_json: str | None, limit: int = 6) -> str:
    """A compact one-line view of an Avro schema header: ``name(type), ...``."""
    if not schema_json:
        return ""
    try:
        fields = json.loads(schema_json).get("fields", [])
    except ValueError:
        return "<invalid schema>"
    names = [f.get("name", "?") for f in fields]
    shown = ", ".join(names[:limit])
    return shown + (f", … (+{len(names) - limit})" if len(names) > limit else "")
