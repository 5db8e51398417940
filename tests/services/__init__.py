"""Tests of the clean and rollback table services, and the table builders and checks they share."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.schedule import ScheduledCompaction, schedule_compaction
from evt_toolkit.errors import EvtError, WriteError
from evt_toolkit.format.names import LogFileName
from evt_toolkit.format.records import CompactionPlan
from evt_toolkit.table.timeline import COMPACTION
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec
from evt_toolkit.write.task import write_file_group
from tests.tables import BASE, rows


class Crash(RuntimeError):
    """An injected failure."""


def compact(
    t: evt.HudiTable, threshold: int, link_mode: str, link_timing: str = "schedule", *, exact_split: bool = False
) -> ScheduledCompaction:
    """Schedule and run an event-time compaction at ``BASE + threshold``; the plan must not be empty."""
    c = schedule_compaction(
        t,
        EventTimeBasedCompactionStrategy(threshold=BASE + threshold),
        link_mode=link_mode,
        link_timing=link_timing,
        exact_split=exact_split,
    )
    assert c is not None
    run_compaction(t, c.instant)
    return c


#: Thresholds (offsets from ``BASE``) of the successive compactions of :func:`build_with_compactions`.
CHAIN_THRESHOLDS = (150, 600, 800)


def build_with_compactions(
    path: Path, link_mode: str, *, rounds: int = 3, link_timing: str = "schedule"
) -> tuple[evt.HudiTable, list[ScheduledCompaction]]:
    """A table compacted ``rounds`` times, whose leftover log is linked again by every compaction: a chain.

    The first log mixes event times 100, 500 and 700, the second holds 900. Exact-split compactions at 150, 600 and
    800 each compact the head of the slice (the first log, then each carry-over log holding the events above the
    previous threshold) and leave the 900 log behind, so compaction ``k`` links to the link of compaction ``k − 1``:
    ``C3.log.2 → C2.log.2 → C1.log.2 → log 2``.
    """
    t = evt.HudiTable.create(
        path, "svc", "id", partition_by="region", ordering_field="ts", event_time_field="ev", buckets=2
    )
    ids = list(range(10))
    t.write(rows(ids, 1, [(100, 500, 700)[i % 3] for i in ids]))
    t.write(rows(range(5, 15), 2, 900))
    done = [compact(t, thr, link_mode, link_timing, exact_split=True) for thr in CHAIN_THRESHOLDS[:rounds]]
    return t, done


def data_files(path: str | Path) -> set[str]:
    """Every file of the table outside ``.hoodie`` (relative paths, symlinks included, dangling or not)."""
    root = Path(path)
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".hoodie")]
        for f in filenames:
            if f.startswith(".hoodie_partition_metadata"):
                continue
            out.add(os.path.relpath(os.path.join(dirpath, f), root))
    return out


def dangling_symlinks(path: str | Path) -> list[str]:
    """Symlinks under the table whose target is missing."""
    bad = []
    for dirpath, _, filenames in os.walk(path):
        for f in filenames:
            p = os.path.join(dirpath, f)
            if os.path.islink(p) and not os.path.exists(p):
                bad.append(p)
    return bad


def visible_dangling_symlinks(t: evt.HudiTable) -> list[str]:
    """Dangling symlinks a reader could meet. A schedule killed before its plan leaves links named with an instant
    no timeline knows: invisible, and removed once old enough (or by ``compaction.repair``); those may dangle."""
    known = {i.time for i in t.timeline.instants}
    return [
        p
        for p in dangling_symlinks(t.path)
        if (n := LogFileName.parse(os.path.basename(p))) is None or n.base_instant in known
    ]


def missing_live_files(t: evt.HudiTable) -> list[str]:
    """Files of the latest (merged) slices that cannot be read: missing, or symlinks that do not resolve."""
    bad: list[str] = []
    for s in t.refresh().view.latest_merged_file_slices():
        files = ([s.base_file.path] if s.base_file else []) + [lf.path for lf in s.log_files]
        bad.extend(f for f in files if not os.path.exists(t.storage.full_path(f)))
    return bad


def symlink_count(path: str | Path) -> int:
    return sum(1 for d, _, fs in os.walk(path) for f in fs if os.path.islink(os.path.join(d, f)))


def failed_write(t: evt.HudiTable, batch: pd.DataFrame | pa.Table, tasks_before_crash: int = 1) -> str:
    """Write ``batch`` with an executor that runs some tasks and then dies; returns the failed instant."""

    def crash(spec: WriteJobSpec, tasks: list[tuple[FileGroupWrite, pa.Table, pa.Table]]) -> Any:
        for i, (fg, up, de) in enumerate(tasks[:tasks_before_crash]):
            write_file_group(spec, fg, up, de, task_partition_id=i)
        raise Crash("executor lost")

    try:
        t.write(batch, executor=crash)
    except WriteError as exc:
        return str(exc).split()[1]
    raise AssertionError("the write was expected to fail")


def time_travel_unsettled(t: evt.HudiTable, at: str, exc: Exception) -> bool:
    """Whether ``exc`` refused time travel at ``at`` because a write requested at or before it has not completed
    (Hudi's ``validateTimestampAsOf``), and such a write is pending on the table's timeline."""
    pending = [i.time for i in t.refresh().timeline.inflight_writes()]
    return "is not settled" in str(exc) and any(p <= at for p in pending)


def incremental_unsettled(t: evt.HudiTable, begin: str, exc: Exception) -> bool:
    """Whether ``exc`` refused an incremental window after ``begin`` because a write requested inside it has not
    completed (timeline layout 1, where windows bound requested times), and such a write is pending on the table."""
    pending = [i.time for i in t.refresh().timeline.inflight_writes()]
    return (
        t.config.timeline_layout < 2
        and "was requested inside the window and has not completed" in str(exc)
        and any(p > begin for p in pending)
    )


def timeline_names(t: evt.HudiTable) -> set[str]:
    return {p.name for p in (Path(t.path) / ".hoodie").iterdir() if p.is_file()}


__all__: Sequence[str] = [
    "CHAIN_THRESHOLDS",
    "Crash",
    "build_with_compactions",
    "compact",
    "dangling_symlinks",
    "data_files",
    "failed_write",
    "missing_live_files",
    "symlink_count",
    "time_travel_unsettled",
    "timeline_names",
]


def recover_and_compact_fully(
    t: evt.HudiTable, failed: Sequence[str], ran: Callable[[str, CompactionPlan], None] | None = None
) -> None:
    """The documented recovery, which must always bring a table back to fully compacted: the rollbacks a crash left
    pending resumed (each must finish), the ``failed`` writes rolled back, pending plans run (or taken back when a
    run is refused: both refused is a failure), then a full compaction scheduled — never refused, whatever crashed
    before — and run. ``ran(instant, plan)`` is told of every compaction run to completion."""
    tl = t.refresh().timeline
    resumed: set[str] = set()
    for r in [i for i in tl.instants if i.action == "rollback" and not i.is_completed]:
        target = tl.rollback_plan(r).target
        assert t.rollback(target).resumed, f"{t.path}: rollback {r.time} of {target} was not resumed"
        resumed.add(target)
    for f in failed:
        if f not in resumed:
            assert t.rollback(f).target == f
    for c in [i.time for i in t.refresh().timeline.pending_compactions()]:
        plan = t.timeline.compaction_plan(t.timeline.instant(c, COMPACTION))
        try:
            t.compaction.run(c)
        except EvtError:
            report = t.compaction.unschedule(c, dry_run=False)
            assert report.refused_reason is None and report.deleted, f"{t.path}: {c} can neither run nor be unscheduled"
            continue
        if ran is not None:
            ran(c, plan)
    full = t.refresh().compaction.schedule(UnBoundedCompactionStrategy())
    if full is not None:
        plan = t.refresh().timeline.compaction_plan(t.timeline.instant(full.instant, COMPACTION))
        t.compaction.run(full.instant)
        if ran is not None:
            ran(full.instant, plan)
