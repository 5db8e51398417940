"""Pending rollbacks that can never finish: found, and retired from the timeline.

A rollback un-commits its target before it changes anything else (:mod:`evt_toolkit.services.rollback`), so one
killed before that step has changed nothing; once a later commit depends on its target it can never finish
(:meth:`~evt_toolkit.table.timeline.Timeline.rollback_overtaken_by`). Left on the timeline it would stop every stock
Hudi writer, which resumes pending rollbacks before it writes. A write that completes, a schedule and a clean (once
every check that can refuse them has passed) and ``compaction repair`` retire such rollbacks (docs/data-safety.md §5).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from evt_toolkit.format.names import INFLIGHT, REQUESTED
from evt_toolkit.storage.fs import relative_path
from evt_toolkit.table.guards import has_metadata_table
from evt_toolkit.table.metadata_table import load_metadata_table
from evt_toolkit.table.timeline import ROLLBACK

if TYPE_CHECKING:
    from evt_toolkit.table.table import Table
    from evt_toolkit.table.timeline import Instant

__all__ = ["retirable_rollbacks", "retire_overtaken_rollbacks", "retire_rollbacks"]


def retirable_rollbacks(table: Table) -> list[Instant]:
    """The pending rollbacks that can never finish and have changed nothing: what
    :func:`retire_overtaken_rollbacks` removes (read only).

    A rollback is retired only when all of this holds:

    * it is overtaken (:meth:`~evt_toolkit.table.timeline.Timeline.rollback_overtaken_by`) by a *completed* instant
      — the compaction it was rolling back, run to completion since, or a write committed after its target. A later
      write still pending could be rolled back and make the rollback finishable again, so it is left alone;
    * every file its plan deletes is still there and its plan appends no rollback command block (stock Hudi deletes
      a rollback's files before it un-commits the target: one of its rollbacks killed half-way has changed data, and
      its plan is kept as the record of what it did);
    * the metadata table holds nothing at the rollback's instant.

    A plan that cannot be read is never retired.
    """
    timeline = table.timeline
    storage = table.storage
    mdt = None
    found: list[Instant] = []
    for inst, plan in timeline.pending_rollback_plans():
        if plan is None or not any(i.is_completed for i in timeline.rollback_overtaken_by(plan)):
            continue
        if any(r.log_blocks_to_delete for r in plan.requests):
            continue
        if not all(storage.lexists(relative_path(storage, p)) for r in plan.requests for p in r.files_to_delete):
            continue
        if mdt is None and has_metadata_table(table):
            mdt = load_metadata_table(table)
        if mdt is not None and mdt.instant(inst.time) is not None:
            continue
        found.append(inst)
    return found


def retire_overtaken_rollbacks(table: Table) -> list[str]:
    """Remove the pending rollbacks that can never finish (:func:`retirable_rollbacks`); returns their instants.

    Such a rollback was killed before it un-committed its target, so it changed nothing, and the table has moved on
    past it. Left pending it would hold every stock Hudi writer up for good: a writer resumes every pending rollback
    before it writes (``rollbackFailedWrites``) and, under the default eager policy, refuses one whose target has
    later commits (``validateRollbackCommitSequence``: "Found commits after time"). Its target stays committed, as
    it was; rolling the target back again, once that is allowed, plans a new rollback. The inflight file goes before
    the requested one (Hudi's ``deletePending``), so a kill in between leaves a pending rollback that is retired the
    next time. Table services call this once every check that can refuse them has passed.
    """
    return retire_rollbacks(table, retirable_rollbacks(table))


def retire_rollbacks(table: Table, rollbacks: Iterable[Instant]) -> list[str]:
    """Delete the timeline files of ``rollbacks`` — found by :func:`retirable_rollbacks` — inflight first; returns
    their instants (for a caller that reported them before it acted)."""
    storage = table.storage
    retired = []
    for inst in rollbacks:
        for state in (INFLIGHT, REQUESTED):
            rel = table.instant_file(inst.time, ROLLBACK, state)
            if storage.exists(rel):
                storage.delete_file(rel)
        retired.append(inst.time)
    if retired:
        table.refresh()
    return retired
