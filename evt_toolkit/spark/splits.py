"""Packing planned file slices into Spark input partitions the way Spark packs files for its own file scans.

One Spark task per file slice costs a Python worker round trip per slice (tens of milliseconds of driver, JVM and
worker time each, whatever the slice's size), which dominated ``hudi_evt`` reads of small and medium tables. Spark's
file sources — and Hudi's own Spark reader, which hands its file slices to Spark's file scan — pack files into
partitions with ``FilePartition.getFilePartitions``: files sorted by size, largest first, each partition filled
"next fit" up to ``maxSplitBytes``, every file counting ``spark.sql.files.openCostInBytes`` on top of its length,
and ``maxSplitBytes = min(spark.sql.files.maxPartitionBytes, max(openCost, totalBytes / minPartitionNum))``. This
module mirrors that rule (``org.apache.spark.sql.execution.datasources.FilePartition``) with a slice's bytes (its
base file plus the logs the read merges) as the file length. A slice is never split: its logs must be merged with
its base in one place.

The settings come from the session (:func:`split_conf_from_spark`, captured when the source is registered: the
planner's Python worker cannot read the session configuration itself).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evt_toolkit.errors import ReadError
from evt_toolkit.read.plan import SliceRead

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SplitConf", "byte_string_as_bytes", "pack_slice_reads", "read_bytes", "split_conf_from_spark"]

MAX_PARTITION_BYTES_CONF = "spark.sql.files.maxPartitionBytes"
OPEN_COST_CONF = "spark.sql.files.openCostInBytes"
MIN_PARTITION_NUM_CONF = "spark.sql.files.minPartitionNum"
MAX_PARTITION_NUM_CONF = "spark.sql.files.maxPartitionNum"
LEAF_PARALLELISM_CONF = "spark.sql.leafNodeDefaultParallelism"

_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def byte_string_as_bytes(text: str) -> int:
    """A Spark byte-size setting (``134217728b``, ``128m``, ``4MB``, ``1048576``) in bytes, as Spark's
    ``JavaUtils.byteStringAsBytes`` reads it (binary units; no suffix means bytes).

    Raises:
        ReadError: not a byte size.

    Example:
        >>> byte_string_as_bytes("128m"), byte_string_as_bytes("4MB"), byte_string_as_bytes("134217728b")
        (134217728, 4194304, 134217728)
    """
    m = re.fullmatch(r"([0-9]+)\s*([a-z]*)", text.strip().lower())
    unit = (m.group(2) if m else "").removesuffix("b") or "b"
    if m is None or unit not in _UNITS:
        raise ReadError(f"{text!r} is not a Spark byte size (expected e.g. 134217728b, 128m, 4MB)")
    return int(m.group(1)) * _UNITS[unit]


@dataclass(frozen=True, slots=True)
class SplitConf:
    """The session settings Spark's file scan packs files with (Spark's defaults unless captured from a session).

    ``min_partitions`` is ``spark.sql.files.minPartitionNum``, else ``spark.sql.leafNodeDefaultParallelism``, else
    the SparkContext's default parallelism; ``None`` (no session seen) uses the planning machine's CPU count, which
    is the default parallelism of a ``local[*]`` session.
    """

    max_partition_bytes: int = 128 << 20
    open_cost_bytes: int = 4 << 20
    min_partitions: int | None = None
    max_partitions: int | None = None

    def min_partition_num(self) -> int:
        return max(1, self.min_partitions if self.min_partitions is not None else (os.cpu_count() or 1))


def split_conf_from_spark(spark: SparkSession) -> SplitConf:
    """The session's file-scan packing settings (read when the data source is registered)."""
    conf = spark.conf

    def opt(key: str) -> str | None:
        value = conf.get(key, None)
        return value if value is not None and str(value).strip() else None

    def count(key: str) -> int | None:
        value = opt(key)
        return int(value) if value is not None else None

    min_partitions = count(MIN_PARTITION_NUM_CONF) or count(LEAF_PARALLELISM_CONF)
    return SplitConf(
        max_partition_bytes=byte_string_as_bytes(opt(MAX_PARTITION_BYTES_CONF) or "128m"),
        open_cost_bytes=byte_string_as_bytes(opt(OPEN_COST_CONF) or "4m"),
        min_partitions=min_partitions or spark.sparkContext.defaultParallelism,
        max_partitions=count(MAX_PARTITION_NUM_CONF),
    )


def read_bytes(read: SliceRead) -> int:
    """The bytes a planned slice read fetches: its base file, plus its logs unless it reads the base only."""
    s = read.file_slice
    base = s.base_file.size if s.base_file is not None else 0
    return base if read.base_only else base + s.total_log_size


def _next_fit(reads: Sequence[SliceRead], max_split: int, open_cost: int) -> list[tuple[SliceRead, ...]]:
    out: list[tuple[SliceRead, ...]] = []
    current: list[SliceRead] = []
    size = 0
    for r in reads:
        n = read_bytes(r)
        if current and size + n > max_split:
            out.append(tuple(current))
            current, size = [], 0
        size += n + open_cost
        current.append(r)
    if current:
        out.append(tuple(current))
    return out


def pack_slice_reads(reads: Sequence[SliceRead], conf: SplitConf) -> list[tuple[SliceRead, ...]]:
    """Group slice reads into Spark input partitions with Spark's ``FilePartition.getFilePartitions`` rule.

    Every read lands in exactly one group; no group is empty; an empty input gives no groups.

    Example:
        >>> from evt_toolkit.table.fs_view import BaseFile, FileSlice
        >>> def read(fid, size):
        ...     return SliceRead(FileSlice("p", fid, "1", BaseFile(f"p/{fid}.parquet", "", fid, "1", "", size), ()),
        ...                      True, None)
        >>> groups = pack_slice_reads([read(str(i), 10 << 20) for i in range(8)], SplitConf(min_partitions=2))
        >>> [len(g) for g in groups]
        [4, 4]
    """
    if not reads:
        return []
    open_cost = conf.open_cost_bytes
    total = sum(read_bytes(r) + open_cost for r in reads)
    max_split = min(conf.max_partition_bytes, max(open_cost, total // conf.min_partition_num()))
    # Largest first, as FileSourceScanExec sorts its splits; the sort is stable, so equal sizes keep plan order.
    ordered = sorted(reads, key=read_bytes, reverse=True)
    groups = _next_fit(ordered, max_split, open_cost)
    if conf.max_partitions is not None and len(groups) > conf.max_partitions > 0:
        groups = _next_fit(ordered, math.ceil(total / conf.max_partitions), open_cost)
    return groups
