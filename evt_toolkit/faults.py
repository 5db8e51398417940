"""Fault injection: kill the process with ``SIGKILL`` at a named step of write, schedule, run, clean or rollback.

Set the environment variable ``EVT_FAULT_AT`` to a point name (``write.after_inflight``) to die at its first hit, or
to ``name#n`` (``run.after_task#2``) to die at its n-th hit in this process. Nothing runs after the kill — no
``finally`` blocks, no buffered output, exactly as when a driver is killed with ``kill -9`` — so tests can check
that what is on storage at that moment, plus the documented recovery, loses nothing and duplicates nothing.

Unset (the normal case) a fault point costs one dictionary lookup.

Points, in the order each operation reaches them (the README's "Crash safety" section gives the recovery for each):

========================== ===============================================================================
``write.after_requested``  ``T.deltacommit.requested`` written, nothing else
``write.after_inflight``   ``T.deltacommit.inflight`` written, no task has run
``write.after_task``       a file-group task wrote its marker and log files (hit once per task)
``write.before_complete``  every task done, ``T.deltacommit`` not yet written
``write.after_complete``   ``T.deltacommit`` written, the marker folder not yet dropped
``links.after_link``       one link of a compaction plan created (hit once per link; schedule or execute time)
``schedule.after_links``   every schedule-time link exists, ``C.compaction.requested`` not yet written
``schedule.before_plan``   right before ``C.compaction.requested`` is written (after the links, if any)
``run.after_inflight``     ``C.compaction.inflight`` exists, no task has run
``run.after_links``        execute-time links created (``link_timing="execute"``), no task has run
``run.after_task``         one operation's base file (and carry-over log) written (local runs; once per task)
``run.before_commit``      every base file written, ``C.commit`` not yet written
``clean.after_requested``  ``T.clean.requested`` written
``clean.after_inflight``   ``T.clean.inflight`` written, nothing deleted
``clean.after_delete``     the plan's files deleted, ``T.clean`` not yet written
``rollback.after_requested`` ``R.rollback.requested`` written
``rollback.after_inflight``  ``R.rollback.inflight`` written, nothing undone
``rollback.after_uncommit``  a completed deltacommit's ``T.deltacommit`` removed, its files still there
``rollback.after_delete``    the target's data files deleted
``rollback.after_blocks``    rollback command blocks written
``rollback.before_complete`` the target's timeline files removed, ``R.rollback`` not yet written
========================== ===============================================================================

Example:
    >>> fault_point("write.after_inflight")  # a no-op unless EVT_FAULT_AT=write.after_inflight
"""

from __future__ import annotations

import os
import signal

__all__ = ["ENV_VAR", "FAULT_POINTS", "fault_point"]

#: The environment variable naming the point to die at (``name`` or ``name#n``).
ENV_VAR = "EVT_FAULT_AT"

#: Every fault point the library calls, in the order an operation reaches them.
FAULT_POINTS: tuple[str, ...] = (
    "write.after_requested",
    "write.after_inflight",
    "write.after_task",
    "write.before_complete",
    "write.after_complete",
    "links.after_link",
    "schedule.after_links",
    "schedule.before_plan",
    "run.after_inflight",
    "run.after_links",
    "run.after_task",
    "run.before_commit",
    "clean.after_requested",
    "clean.after_inflight",
    "clean.after_delete",
    "rollback.after_requested",
    "rollback.after_inflight",
    "rollback.after_uncommit",
    "rollback.after_delete",
    "rollback.after_blocks",
    "rollback.before_complete",
)

_hits: dict[str, int] = {}


def _target(spec: str) -> tuple[str, int]:
    name, sep, nth = spec.strip().partition("#")
    if not sep:
        return name, 1
    try:
        return name, max(1, int(nth))
    except ValueError:
        return name, 1


def fault_point(name: str) -> None:
    """Kill this process with ``SIGKILL`` when ``EVT_FAULT_AT`` names this point (and this is the wanted hit).

    Args:
        name: the point, one of :data:`FAULT_POINTS`.
    """
    spec = os.environ.get(ENV_VAR)
    if not spec:
        return
    target, nth = _target(spec)
    if target != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= nth:
        os.kill(os.getpid(), signal.SIGKILL)
