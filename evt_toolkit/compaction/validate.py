"""Checking a compaction plan against storage, and taking back a plan that has not run.

:func:`validate_compaction` answers "can this plan run, and are its links sound?" without writing anything:
the plan decodes with the stock schema, its files exist, the compacted logs are a prefix of the slice's replay
order with the leftovers after them, and every link stands for its target (``copy``: equal bytes; ``symlink``:
resolves to the target).

:func:`unschedule_compaction` removes a plan that wrote nothing into its new slices: it deletes the links, the
executor's own hidden outputs (base files and carry-over logs named with ``C``), then ``C.compaction.inflight`` and
``C.compaction.requested`` — the plan file last, so that a crash half-way leaves a plan that can still be run or
unscheduled again. It refuses once ``C`` completed or a writer put a log into a new slice (that log's data would be
orphaned).

Example:
    >>> validate_compaction(t, c.instant).ok  # doctest: +SKIP
    True
    >>> unschedule_compaction(t, c.instant).files_to_delete  # doctest: +SKIP
    ('.hoodie/20250102000000000.compaction.requested', ...)
"""

from __future__ import annotations

import io
import json
import os
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING

import fastavro

from evt_toolkit.compaction.executor import (
    _find_instant,
    old_slice_logs,
    plan_links_with_partition,
    validate_plan_files,
)
from evt_toolkit.compaction.links import check_link
from evt_toolkit.compaction.merge_task import base_file_token
from evt_toolkit.compaction.plan import EXTRA_LINK_MODE, EXTRA_LINK_TIMING
from evt_toolkit.compaction.schedule import plan_file
from evt_toolkit.errors import EvtError
from evt_toolkit.format.metadata import load_schema, read_avro_container
from evt_toolkit.format.names import INFLIGHT, REQUESTED, BaseFileName, LogFileName

if TYPE_CHECKING:
    from evt_toolkit.table.table import Table

__all__ = ["UnscheduleReport", "ValidationReport", "unschedule_compaction", "validate_compaction"]


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """Result of :func:`validate_compaction`: ``ok`` when ``problems`` is empty; ``checked`` = files checked."""

    ok: bool
    problems: tuple[str, ...]
    checked: int


@dataclass(frozen=True, slots=True)
class UnscheduleReport:
    """Result of :func:`unschedule_compaction`.

    Attributes:
        instant: the compaction instant.
        files_to_delete: paths relative to the base path, in deletion order.
        deleted: whether they were deleted (``False`` for a dry run or a refusal).
        refused_reason: why the plan cannot be taken back, else ``None``.
    """

    instant: str
    files_to_delete: tuple[str, ...]
    deleted: bool
    refused_reason: str | None


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
    ops = plan.get("operations") or []
    if not inst.is_completed:
        problems.extend(validate_plan_files(table, plan))
        checked += sum(len(op.get("deltaFilePaths") or []) + (1 if op.get("dataFilePath") else 0) for op in ops)
    extra = plan.get("extraMetadata") or {}
    mode = extra.get(EXTRA_LINK_MODE, "copy")
    links_expected = inst.is_completed or extra.get(EXTRA_LINK_TIMING, "schedule") == "schedule"
    live_slices = (
        {(s.partition_path, s.file_id, s.base_instant) for g in table.view.file_groups() for s in g.slices}
        if inst.is_completed
        else set()
    )
    for link in plan_links_with_partition(plan):
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
        res = check_link(table.storage, link, mode)
        if not res.ok and res.problem:
            problems.append(res.problem)
    return ValidationReport(not problems, tuple(problems), checked)


def unschedule_compaction(table: Table, instant: str, *, dry_run: bool = True) -> UnscheduleReport:
    """Take back a pending compaction that wrote nothing into its new slices (dry run by default).

    Deletes, in order: the links, the executor's hidden outputs named with ``C`` (base files; carry-over logs at
    version 1 with the executor's token), ``C.compaction.inflight``, ``C.compaction.requested``.
    """
    table.refresh()
    try:
        inst = _find_instant(table, instant)
    except EvtError as exc:
        return UnscheduleReport(instant, (), False, str(exc))
    if inst.is_completed:
        return UnscheduleReport(instant, (), False, f"compaction {instant} has completed; roll it back instead")
    try:
        plan = table.timeline.compaction_plan(inst)
    except EvtError as exc:
        return UnscheduleReport(instant, (), False, f"cannot read the plan: {exc}")
    storage = table.storage
    links = plan_links_with_partition(plan)
    link_paths = {link.symlink_path for link in links}
    files: list[str] = [p for p in sorted(link_paths) if storage.exists(p) or _is_link(table, p)]
    outputs: list[str] = []
    for i, op in enumerate(plan.get("operations") or []):
        partition = str(op.get("partitionPath") or "")
        fid = str(op["fileId"])
        ours = f".{fid}_{instant}.log.1_{base_file_token(i)}"
        for name in old_slice_logs(table, partition, fid, instant):
            path = posixpath.join(partition, name) if partition else name
            if path in link_paths:
                continue
            if name == ours:
                outputs.append(path)
                continue
            parsed = LogFileName.parse(name)
            version = parsed.version if parsed else "?"
            return UnscheduleReport(
                instant,
                (),
                False,
                f"a writer already put log {storage.full_path(path)} (version {version}) into the new slice of "
                f"{fid}; unscheduling would orphan its data",
            )
        entries, _ = storage.list_dir(partition)
        for e in entries:
            parsed_base = BaseFileName.parse(e.name) if not e.name.startswith(".") else None
            if parsed_base and parsed_base.file_id == fid and parsed_base.instant == instant:
                outputs.append(e.path)
    files.extend(outputs)
    for state in (INFLIGHT, REQUESTED):
        rel = plan_file(table, instant, state)
        if storage.exists(rel):
            files.append(rel)
    if dry_run:
        return UnscheduleReport(instant, tuple(files), False, None)
    for rel in files:
        if _is_link(table, rel):
            os.unlink(storage.full_path(rel))
        else:
            storage.delete_file(rel)
    table.refresh()
    return UnscheduleReport(instant, tuple(files), True, None)


def _is_link(table: Table, rel: str) -> bool:
    return table.storage.is_local and os.path.islink(table.storage.full_path(rel))
