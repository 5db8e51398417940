"""Fencing of late task attempts: a write task writes only while its instant is inflight.

Spark may run an attempt of a write task after the driver has already committed the instant with another attempt's
files: a speculative copy that lost, or an attempt Spark has not stopped yet (a Python task is killed only after
``spark.python.task.killTimeout``). Its files, named with the instant and its own write token, would be read as part
of the completed instant (or, after a rollback, be left on storage), though no commit lists them. A task therefore
checks the timeline before it writes (:func:`require_inflight`) and again after (:func:`withdraw_if_decided`): files
written once the instant completed or was rolled back are deleted by the task itself, and the files of a task that
checked just before the driver completed the instant are recorded in the instant's ownership records, which the
driver reconciles once more after completing it (:func:`evt_toolkit.write.writer.write`).

A compaction task's outputs carry names that depend only on the plan, so a late attempt of one would write over the
files the commit lists — with other contents once writes landed in the new slice (their records decide which keys a
compaction carries over). A compaction task therefore checks, right before it puts its outputs under their names,
that its compaction is running (:func:`require_compaction_running`): not completed, not rolled back to requested, not
unscheduled. A task of a Spark run also carries its run attempt's id and checks, at the same points, that the driver
has not given that attempt up (:func:`require_attempt_live`): a task of a cancelled job runs on in its Python worker
until Spark kills it, and the driver records ``evt-abandoned.<attempt>`` in the compaction's marker folder before it
reports the failure (:func:`evt_toolkit.storage.ownership.abandon_attempt`).

Example:
    >>> require_inflight(storage, spec, "file group 0001")  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from evt_toolkit.errors import CompactionExecutionError, EvtError, WriteError
from evt_toolkit.format.names import COMPLETED, INFLIGHT, REQUESTED, InstantFileName
from evt_toolkit.format.table_version import table_version_format
from evt_toolkit.storage.fs import TableStorage
from evt_toolkit.storage.ownership import attempt_state, record_folder
from evt_toolkit.table.timeline import COMMIT, COMPACTION, DELTA_COMMIT
from evt_toolkit.write.plan import WriteJobSpec

__all__ = [
    "compaction_state",
    "instant_state",
    "require_attempt_live",
    "require_compaction_running",
    "require_inflight",
    "require_still_pending",
    "withdraw_if_decided",
]

INFLIGHT_STATE = "inflight"
COMPLETED_STATE = "completed"
GONE_STATE = "gone"
RUNNING_STATE = "running"
REQUESTED_STATE = "requested"


def instant_state(names: Iterable[str], instant: str) -> str:
    """``completed``, ``inflight`` (requested or inflight) or ``gone`` (rolled back): ``instant``'s state among the
    timeline file ``names``."""
    state = GONE_STATE
    for name in names:
        parsed = InstantFileName.parse(name)
        if parsed is None or parsed.requested_time != instant:
            continue
        if parsed.state == COMPLETED:
            return COMPLETED_STATE
        state = INFLIGHT_STATE
    return state


def _state(storage: TableStorage, spec: WriteJobSpec) -> str:
    fmt = table_version_format(spec.table_version)
    if fmt.timeline_layout < 2:
        # Layout 1 names every state of the deltacommit without a completion time: two HEADs (or stats) instead of
        # a listing of the whole timeline folder, which grows with every instant and costs every write task twice.
        if storage.is_file(fmt.instant_path(spec.instant, DELTA_COMMIT, COMPLETED)):
            return COMPLETED_STATE
        if any(storage.is_file(fmt.instant_path(spec.instant, DELTA_COMMIT, s)) for s in (INFLIGHT, REQUESTED)):
            return INFLIGHT_STATE
        return GONE_STATE
    # Layout 2 names the completed file with its completion time, which only a listing finds.
    files, _ = storage.list_dir(fmt.timeline_path)
    return instant_state((f.name for f in files), spec.instant)


def require_inflight(storage: TableStorage, spec: WriteJobSpec, what: str) -> None:
    """Refuse to write ``what`` unless the task's instant is still inflight.

    Raises:
        WriteError: the instant completed (another attempt's files were committed) or was rolled back.
    """
    state = _state(storage, spec)
    if state != INFLIGHT_STATE:
        now = "already completed" if state == COMPLETED_STATE else "no longer on the timeline (rolled back)"
        raise WriteError(
            f"instant {spec.instant} of {storage.uri} is {now}: this task attempt does not write {what} "
            "(a late or speculative attempt; the files the commit lists stand)"
        )


def require_still_pending(storage: TableStorage, spec: WriteJobSpec) -> None:
    """The driver, right before it completes the instant: refuse when it is no longer pending.

    A rollback cannot tell a running write from a failed one: one run by another handle or process while this write
    ran deleted its files and timeline files, and completing now would report a write whose records are gone.

    Raises:
        WriteError: the instant was rolled back (or completed) meanwhile; nothing is completed.
    """
    state = _state(storage, spec)
    if state == INFLIGHT_STATE:
        return
    now = "completed elsewhere" if state == COMPLETED_STATE else "rolled back"
    raise WriteError(
        f"deltacommit {spec.instant} of {storage.uri} was {now} (by another handle or process) while this write ran; "
        "it is not completed and its records are not in the table: write them again"
    )


def withdraw_if_decided(storage: TableStorage, spec: WriteJobSpec, written: Iterable[str], what: str) -> None:
    """After writing ``written``: when the instant completed or was rolled back meanwhile, delete them and refuse.

    Raises:
        WriteError: the files were written after the instant was decided; they are deleted.
    """
    state = _state(storage, spec)
    if state == INFLIGHT_STATE:
        return
    for rel in written:
        with contextlib.suppress(EvtError):
            storage.delete_file(rel)
    raise WriteError(
        f"instant {spec.instant} of {storage.uri} was {'completed' if state == COMPLETED_STATE else 'rolled back'} "
        f"while this task attempt wrote {what}; its files are deleted (a late or speculative attempt)"
    )


def compaction_state(names: Iterable[str], instant: str) -> str:
    """``completed``, ``running`` (inflight), ``requested`` (rolled back to its plan, or not started) or ``gone``
    (unscheduled): compaction ``instant``'s state among the timeline file ``names``."""
    states = set()
    for name in names:
        parsed = InstantFileName.parse(name)
        if parsed is None or parsed.requested_time != instant:
            continue
        if parsed.state == COMPLETED and parsed.action == COMMIT:
            return COMPLETED_STATE
        if parsed.action == COMPACTION:
            states.add(parsed.state)
    if INFLIGHT in states:
        return RUNNING_STATE
    return REQUESTED_STATE if REQUESTED in states else GONE_STATE


def _compaction_state(storage: TableStorage, timeline_path: str, layout: int, instant: str) -> str:
    if layout < 2:
        # Layout 1 names every state without a completion time: HEADs (or stats) instead of a timeline listing.
        names = [
            InstantFileName(instant, COMMIT, COMPLETED).name,
            InstantFileName(instant, COMPACTION, INFLIGHT).name,
            InstantFileName(instant, COMPACTION, REQUESTED).name,
        ]
        for name in names:
            if storage.is_file(f"{timeline_path}/{name}"):
                return compaction_state([name], instant)
        return GONE_STATE
    files, _ = storage.list_dir(timeline_path)
    return compaction_state((f.name for f in files), instant)


def require_compaction_running(storage: TableStorage, timeline_path: str, layout: int, instant: str, what: str) -> None:
    """Refuse to write ``what`` (a task's outputs, or the commit) unless compaction ``instant`` is running.

    Raises:
        CompactionExecutionError: the compaction completed (the files its commit lists stand), was rolled back
            (its plan is requested again) or unscheduled; nothing was written.
    """
    state = _compaction_state(storage, timeline_path, layout, instant)
    if state == RUNNING_STATE:
        return
    now = {
        COMPLETED_STATE: "already completed: the files its commit lists stand",
        REQUESTED_STATE: "not running (rolled back to its plan): a run writes them again",
        GONE_STATE: "no longer on the timeline (unscheduled)",
    }[state]
    raise CompactionExecutionError(f"compaction {instant} of {storage.uri} is {now}; {what} is not written")


def require_attempt_live(storage: TableStorage, instant: str, attempt: str, what: str) -> None:
    """Refuse to write ``what`` unless run ``attempt`` of compaction ``instant`` is still the driver's: its tasks'
    ownership record stands and the driver has not recorded it abandoned (one listing of the record folder).

    Raises:
        CompactionExecutionError: the driver gave the attempt up (its job failed or was cancelled), or the run's
            records are gone (rolled back, or completed by another attempt); nothing was written.
    """
    files, _ = storage.list_dir(record_folder(instant))
    state = attempt_state((f.name for f in files), attempt)
    if state == "live":
        return
    now = (
        "was given up by its driver (its job failed or was cancelled)"
        if state == "abandoned"
        else "has no record any more (the run was rolled back or completed)"
    )
    raise CompactionExecutionError(
        f"compaction {instant} of {storage.uri}: run attempt {attempt} {now}; {what} is not written"
    )
