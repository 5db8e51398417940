"""Building a ``HoodieCompactionPlan`` with the RFC's ``symlinkOperations`` — pure, no I/O.

The plan is what Hudi 0.14 writes (``hudi-format.md`` §4): version 2, one operation per file slice with
``baseInstantTime``, ``deltaFilePaths`` (bare names of the compacted logs, in ``LogFileComparator`` order),
``dataFilePath``, ``fileId``, ``partitionPath``, ``metrics`` (``captureMetrics``) and ``bootstrapFilePath``; plus,
appended as the last field of each operation, ``symlinkOperations`` (design §2.3): one ``{symlink, target}`` per
leftover log, linking it into the new slice at the plan's instant ``C`` as ``.{fileId}_{C}.log.{v}_{token}``, with
versions ``1..k`` in the leftovers' order and the target's own write token. Writes after the plan continue at
``k+1``.

The Avro schema (``HoodieCompactionPlan.evt.avsc``) is Hudi's v6 plan schema with that one optional field added
last, so Java's reader schema resolves our files by skipping it.

Example:
    >>> from evt_toolkit.compaction.model import LogFileInfo as L
    >>> [link.symlink for link in allocate_link_names("fg", "20250102000000000", [L.synthetic("fg", 3)])]
    ['.fg_20250102000000000.log.1_0-0-0']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evt_toolkit.compaction.model import LogFileInfo, OperationSelection
from evt_toolkit.compaction.strategy import CompactionStrategy, capture_metrics, iso_ms
from evt_toolkit.errors import PlanValidationError
from evt_toolkit.format.links import COPY, LINK_MODES, LINK_TIMINGS, Link
from evt_toolkit.format.metadata import encode_avro_container, load_schema
from evt_toolkit.format.names import LogFileName
from evt_toolkit.format.records import CompactionOperation, CompactionPlan

__all__ = [
    "EXTRA_EVENT_TIME_FIELD",
    "EXTRA_LINK_MODE",
    "EXTRA_LINK_TIMING",
    "EXTRA_STRATEGY",
    "EXTRA_THRESHOLD_ISO",
    "EXTRA_THRESHOLD_MS",
    "LINK_MODES",
    "LINK_TIMINGS",
    "PLAN_SCHEMA_NAME",
    "PLAN_VERSION",
    "allocate_link_names",
    "build_operation",
    "build_plan",
    "encode_plan",
    "next_write_version_after_links",
    "plan_links",
    "plan_schema",
]

#: ``CompactionUtils.LATEST_COMPACTION_METADATA_VERSION``.
PLAN_VERSION = 2
PLAN_SCHEMA_NAME = "HoodieCompactionPlan.evt"

# extraMetadata keys; "evt." keeps them apart from Hudi's own keys (``schema``, checkpoints).
EXTRA_STRATEGY = "evt.compaction.strategy"
EXTRA_THRESHOLD_MS = "evt.compaction.threshold.ms"
EXTRA_THRESHOLD_ISO = "evt.compaction.threshold.iso"
EXTRA_LINK_MODE = "evt.compaction.link.mode"
EXTRA_LINK_TIMING = "evt.compaction.link.timing"
EXTRA_EVENT_TIME_FIELD = "hoodie.payload.event.time.field"
_EXTRA_SETTING_PREFIX = "evt.compaction.strategy."


def allocate_link_names(
    file_id: str,
    instant: str,
    remaining: Sequence[LogFileInfo],
    *,
    first_version: int = 1,
    partition_path: str = "",
    mode: str = COPY,
    timing: str = "schedule",
) -> tuple[Link, ...]:
    """The links that carry a slice's leftover logs into the new slice at ``instant``.

    Versions are ``first_version..first_version+k-1`` in the leftovers' (replay) order, so the new slice replays
    them in the same order; each link keeps its target's write token (design §2.3).

    Args:
        file_id: the file group.
        instant: the compaction instant ``C`` (the new slice's base instant).
        remaining: the leftover logs, in replay order.
        first_version: 1 for a fresh slice.
        partition_path: the file group's partition.
        mode: ``copy`` or ``symlink``.
        timing: ``schedule`` or ``execute``.

    Example:
        >>> from evt_toolkit.compaction.model import LogFileInfo as L
        >>> links = allocate_link_names("f", "2", [L.synthetic("f", 4, write_token="1-0-1"), L.synthetic("f", 5)])
        >>> [x.symlink for x in links]
        ['.f_2.log.1_1-0-1', '.f_2.log.2_0-0-0']
        >>> links[0].target
        '.f_20250101000000000.log.4_1-0-1'
    """
    if first_version < 1:
        raise PlanValidationError(f"log versions start at 1, got {first_version} for file group {file_id}")
    return tuple(
        Link(
            partition_path,
            LogFileName(file_id, instant, "log", first_version + i, lf.write_token).name,
            lf.name,
            instant,
            mode,
            timing,
        )
        for i, lf in enumerate(remaining)
    )


def next_write_version_after_links(links: Sequence[Link | Mapping[str, Any]]) -> int:
    """The log version a writer must use next in the new slice: one past the highest link version (1 if none).

    Example:
        >>> next_write_version_after_links([{"symlink": ".f_2.log.2_0-0-0", "target": "x"}])
        3
    """
    highest = 0
    for link in links:
        name = link.symlink if isinstance(link, Link) else link.get("symlink")
        parsed = LogFileName.parse(name or "")
        if parsed is None:
            raise PlanValidationError(f"symlink {name!r} is not a log file name")
        highest = max(highest, parsed.version)
    return highest + 1


def build_operation(
    selection: OperationSelection,
    instant: str,
    *,
    parquet_max_file_size: int | None = None,
    strategy: CompactionStrategy | None = None,
    link_mode: str = COPY,
    link_timing: str = "schedule",
) -> CompactionOperation:
    """One ``HoodieCompactionOperation`` (with ``symlinkOperations``) for a selection.

    Raises:
        PlanValidationError: the compacted logs are not a prefix of the slice, or nothing is compacted.
    """
    s = selection.slice
    n = len(selection.to_compact)
    if n == 0:
        raise PlanValidationError(f"operation for file group {s.file_id} in {s.partition_path!r} compacts no log")
    if selection.to_compact + selection.to_remain != s.log_files:
        raise PlanValidationError(
            f"file group {s.file_id} in {s.partition_path!r}: compacted logs are not a prefix of the slice's logs "
            "(a later log compacted before an earlier one would let the earlier one overwrite newer values)"
        )
    if parquet_max_file_size is None:
        metrics = strategy.metrics(selection) if strategy is not None else capture_metrics(s, selection.to_compact)
    else:
        metrics = capture_metrics(s, selection.to_compact, parquet_max_file_size=parquet_max_file_size)
    links = allocate_link_names(
        s.file_id, instant, selection.to_remain, partition_path=s.partition_path, mode=link_mode, timing=link_timing
    )
    return CompactionOperation(
        partition_path=s.partition_path,
        file_id=s.file_id,
        base_instant=s.base_instant,
        delta_files=tuple(lf.name for lf in selection.to_compact),
        data_file=s.base_file,
        metrics=dict(metrics),
        links=links,
    )


def build_plan(
    selections: Sequence[OperationSelection],
    instant: str,
    strategy: CompactionStrategy,
    threshold: int | None = None,
    link_mode: str = "copy",
    link_timing: str = "schedule",
    *,
    event_time_field: str | None = None,
    extra_metadata: Mapping[str, str] | None = None,
) -> CompactionPlan | None:
    """A ``HoodieCompactionPlan`` for the selections, or ``None`` when nothing is to be compacted.

    Args:
        selections: operations in plan order (from ``strategy.select_operations``). Those with nothing to compact
            are dropped, as Hudi drops empty operations.
        instant: the compaction instant ``C``.
        strategy: the strategy that chose them (recorded in ``extraMetadata``).
        threshold: T in epoch ms (event-time strategies).
        link_mode: ``copy`` or ``symlink``.
        link_timing: ``schedule`` (links before ``C.compaction.requested``) or ``execute``.
        event_time_field: recorded as ``hoodie.payload.event.time.field`` (defaults to the strategy's).
        extra_metadata: more ``extraMetadata`` (Hudi copies e.g. ``schema`` from the triggering write).

    Raises:
        PlanValidationError: bad link settings, a duplicate file group, or an operation breaking the prefix rule.

    Example:
        >>> from evt_toolkit.compaction.model import LogFileInfo as L, SliceInfo
        >>> from evt_toolkit.compaction.strategy import EventTimeBasedCompactionStrategy as E
        >>> s = SliceInfo("p", "f", "1", None, None, (L.synthetic("f", 1, min_event_time=1),
        ...                                             L.synthetic("f", 2, min_event_time=9)))
        >>> st = E(threshold=5)
        >>> plan = build_plan(st.select_operations([s], now_ms=10), "20250102000000000", st, 5)
        >>> plan.operations[0].links[0].symlink
        '.f_20250102000000000.log.1_0-0-0'
    """
    if link_mode not in LINK_MODES:
        raise PlanValidationError(f"link_mode must be one of {', '.join(LINK_MODES)}, got {link_mode!r}")
    if link_timing not in LINK_TIMINGS:
        raise PlanValidationError(f"link_timing must be one of {', '.join(LINK_TIMINGS)}, got {link_timing!r}")
    seen: set[tuple[str, str]] = set()
    operations: list[CompactionOperation] = []
    for sel in selections:
        if not sel.to_compact:
            continue
        key = (sel.slice.partition_path, sel.slice.file_id)
        if key in seen:
            raise PlanValidationError(f"file group {key[1]} in {key[0]!r} appears twice in compaction plan {instant}")
        seen.add(key)
        operations.append(
            build_operation(sel, instant, strategy=strategy, link_mode=link_mode, link_timing=link_timing)
        )
    if not operations:
        return None
    extra: dict[str, str] = dict(extra_metadata or {})
    extra[EXTRA_STRATEGY] = strategy.hudi_class
    for setting, value in strategy.describe().items():
        if setting != "strategy":
            extra[_EXTRA_SETTING_PREFIX + setting] = value
    if threshold is not None:
        extra[EXTRA_THRESHOLD_MS] = str(int(threshold))
        extra[EXTRA_THRESHOLD_ISO] = iso_ms(int(threshold))
    extra[EXTRA_LINK_MODE] = link_mode
    extra[EXTRA_LINK_TIMING] = link_timing
    field = event_time_field or getattr(strategy, "event_time_field", None)
    if field:
        extra[EXTRA_EVENT_TIME_FIELD] = field
    return CompactionPlan(tuple(operations), extra, PLAN_VERSION)


def plan_links(plan: CompactionPlan) -> dict[tuple[str, str], tuple[Link, ...]]:
    """``(partition, fileId) -> links`` of a plan; operations without links are left out."""
    return {(op.partition_path, op.file_id): op.links for op in plan.operations if op.links}


def plan_schema() -> str:
    """The extended plan schema string (``HoodieCompactionPlan.evt.avsc``)."""
    return load_schema(PLAN_SCHEMA_NAME)


def encode_plan(plan: CompactionPlan | Mapping[str, Any], *, sync_marker: bytes | None = None) -> bytes:
    """The plan as a single-record Avro container (``C.compaction.requested``), extended schema embedded.

    Raises:
        PlanValidationError: the plan does not match the schema.
    """
    record = plan.to_record() if isinstance(plan, CompactionPlan) else plan
    try:
        return encode_avro_container(record, plan_schema(), sync_marker=sync_marker)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # fastavro's ways of saying "does not match"
        raise PlanValidationError(f"compaction plan does not match {PLAN_SCHEMA_NAME}: {exc}") from exc
