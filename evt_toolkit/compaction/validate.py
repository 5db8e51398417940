"""Checking a compaction plan against storage.

:func:`validate_compaction` answers "can this plan run, and are its links sound?" without writing anything:
the plan decodes with the stock schema, its files exist, the compacted logs are a prefix of the slice's replay
order with the leftovers after them, and every link stands for its target (``copy``: equal bytes; ``symlink``:
resolves to the target).

Taking a plan back is :mod:`evt_toolkit.compaction.unschedule`.

Example:
    >>> validate_compaction(t, c.instant).ok  # doctest: +SKIP
    True
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import fastavro

from evt_toolkit.compaction.executor import _find_instant
from evt_toolkit.compaction.plan import EXTRA_LINK_MODE, EXTRA_LINK_TIMING
from evt_toolkit.compaction.plan_files import plan_file, validate_plan_files
from evt_toolkit.errors import EvtError
from evt_toolkit.format.metadata import load_schema, read_avro_container
from evt_toolkit.format.names import LogFileName
from evt_toolkit.storage.links import check_link

if TYPE_CHECKING:
    from evt_toolkit.table.table import Table

__all__ = ["ValidationReport", "validate_compaction"]


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """Result of :func:`validate_compaction`: ``ok`` when ``problems`` is empty; ``checked`` = files checked."""

    ok: bool
    problems: tuple[str, ...]
    checked: int


def _stock_schema_problem(data: bytes, path: str) -> str | None:
    """Decode the plan with Hudi's own v6 schema as reader schema (what Java does), ignoring our extra field."""
    try:
        reader_schema = fastavro.parse_schema(json.loads(load_schema("HoodieCompactionPlan.v6")))
        records = list(fastavro.reader(io.BytesIO(data), reader_schema=reader_schema))
    except (ValueError, TypeError, KeyError, EOFError, OSError) as exc:  # the decoder failure is the finding
        return f"plan {path} does not decode with Hudi's HoodieCompactionPlan schema: {exc}"
    if len(records) != 1:
        return f"plan {path} holds {len(records)} records, expected 1"
    return None


def validate_compaction(table: Table, instant: str) -> ValidationReport:
    """Check a (pending or completed) compaction plan against storage; never writes.

    Problems are sentences naming the file at fault. For a completed compaction the old slice may have been cleaned,
    so only the plan's decoding and the links are checked.
    """
    table.refresh()
    problems: list[str] = []
    checked = 0
    try:
        inst = _find_instant(table, instant)
        plan = table.timeline.compaction_plan(inst)
    except EvtError as exc:
        return ValidationReport(False, (str(exc),), 0)
    rel = plan_file(table, instant)
    try:
        data = table.storage.read_bytes(rel)
        read_avro_container(data, table.storage.full_path(rel))
        stock = _stock_schema_problem(data, table.storage.full_path(rel))
        if stock:
            problems.append(stock)
    except EvtError as exc:
        problems.append(str(exc))
    checked += 1
    if not inst.is_completed:
        problems.extend(validate_plan_files(table, plan, instant))
        checked += sum(len(op.delta_files) + (1 if op.data_file else 0) for op in plan.operations)
    if (
        inst.is_completed
        and plan.links
        and table.config.timeline_layout >= 2
        and inst.completion_time not in (None, instant)
    ):
        # docs/hudi-1x.md §4.4: a plan with links must complete *at* C, or a write that completed in its pending
        # window replays before the leftovers in a reader that orders a slice's logs by completion time. A stock
        # executor of our plan completes C with its real completion time.
        problems.append(
            f"compaction {instant} completed at {inst.completion_time}, not at its requested time: its links replay "
            "after writes that completed in its pending window for readers that order logs by completion time "
            "(was it run by another executor?)"
        )
    extra = plan.extra
    mode = extra.get(EXTRA_LINK_MODE, "copy")
    links_expected = inst.is_completed or extra.get(EXTRA_LINK_TIMING, "schedule") == "schedule"
    live_slices = (
        {(s.partition_path, s.file_id, s.base_instant) for g in table.view.file_groups() for s in g.slices}
        if inst.is_completed
        else set()
    )
    for link in plan.links:
        checked += 1
        if inst.is_completed:
            parsed = LogFileName.parse(link.symlink)
            if parsed is not None and (link.partition_path, parsed.file_id, instant) not in live_slices:
                continue  # the slice C created was cleaned after newer slices replaced it: links went with it
        if not links_expected and not table.storage.exists(link.symlink_path):
            continue  # execute-time links appear when the plan runs
        if (
            inst.is_completed
            and mode == "copy"
            and table.storage.exists(link.symlink_path)
            and not table.storage.exists(link.target_path)
        ):
            continue  # a copy holds its own bytes: a clean may have removed the original after C completed
        res = check_link(table.storage, link)
        if not res.ok and res.problem:
            problems.append(res.problem)
    return ValidationReport(not problems, tuple(problems), checked)
