"""Facts recorded in completed commits' write stats, indexed for readers and table services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from evt_toolkit.errors import EvtError
from evt_toolkit.format.extra_metadata import WRITE_DELETE_EVENT_TIMES, DeleteEventTimes, decode_delete_event_times
from evt_toolkit.table.timeline import DELTA_COMMIT, Timeline

EventTimeStat = Literal["minEventTime", "maxEventTime"]


def _as_int(value: Any) -> int | None:
    try:
        return None if value is None or value == "" else int(value)
    except (TypeError, ValueError):
        return None


def log_event_time_index(timeline: Timeline, stat: EventTimeStat) -> dict[tuple[str, str], int]:
    """``(log file name, writing instant) -> minEventTime | maxEventTime`` (epoch ms) of every completed commit.

    Hudi records these per write stat (``HoodieWriteStat``), i.e. per log file and deltacommit; stock writers leave
    them null unless ``DefaultHoodieRecordPayload`` tracks event time. Commits whose metadata cannot be decoded and
    values that are not integers are skipped: the caller falls back to the next source (a scan of the data).
    """
    out: dict[tuple[str, str], int] = {}
    timeline.prefetch(timeline.completed_commits())
    for inst in timeline.completed_commits():
        try:
            meta = timeline.commit_metadata(inst)
        except EvtError:
            continue
        for st in meta.write_stats:
            name = st.file_name
            value = st.min_event_time if stat == "minEventTime" else st.max_event_time
            if name.startswith(".") and value is not None:
                out[(name, inst.time)] = value
    return out


def delete_event_time_index(timeline: Timeline) -> dict[tuple[str, str], DeleteEventTimes]:
    """``(log file name, writing instant) -> DeleteEventTimes`` recorded by the toolkit's writer.

    Hudi's ``minEventTime`` counts the records a file writes, not those it deletes; the toolkit records the event times
    of deleted records (when the delete batch carried the event-time field) in the deltacommit's ``extraMetadata``.
    A file missing from the index has deletes of unknown event time.
    """
    out: dict[tuple[str, str], DeleteEventTimes] = {}
    for inst in timeline.completed_commits():
        try:
            meta = timeline.commit_metadata(inst)
            text = meta.extra.get(WRITE_DELETE_EVENT_TIMES)
            if not text:
                continue
            decoded = decode_delete_event_times(str(text), inst.time)
        except EvtError:
            continue
        for path, d in decoded.items():
            out[(path.rsplit("/", 1)[-1], inst.time)] = d
    return out


@dataclass(frozen=True, slots=True)
class LogWrite:
    """What one completed deltacommit appended to one log file, as its ``HoodieDeltaWriteStat`` records it.

    Attributes:
        instant: the deltacommit (the ``INSTANT_TIME`` header of every block it wrote).
        offset: ``logOffset``, where its first block starts.
        size: ``fileSizeInBytes``: the bytes it appended (``HoodieAppendHandle`` sums them over its appends).
        records: ``numWrites``: records in its data blocks.
        deletes: ``numDeletes``: keys in its delete block.
        min_event_time: ``minEventTime`` (epoch ms) of the records it wrote, ``None`` when not recorded.
    """

    instant: str
    offset: int
    size: int
    records: int
    deletes: int
    min_event_time: int | None


def log_write_index(timeline: Timeline) -> dict[str, tuple[LogWrite, ...]]:
    """``log file path (relative to the base path) -> LogWrite`` of every completed deltacommit, by offset.

    Only deltacommits append log blocks under their own instant; a log compaction also completes as a deltacommit
    and writes blocks under its instant. Compaction commits are left out: a carry-over log they record holds blocks
    of older instants. Stats without ``logOffset`` are left out (the log cannot be proven covered by them). One GET
    per commit file, in parallel (the commit metadata is cached by the timeline).
    """
    commits = [i for i in timeline.completed_commits() if i.action == DELTA_COMMIT]
    timeline.prefetch(commits)
    out: dict[str, list[LogWrite]] = {}
    for inst in commits:
        try:
            meta = timeline.commit_metadata(inst)
        except EvtError:
            continue
        for st in meta.write_stats:
            if st.log_offset is None or not st.file_name.startswith("."):
                continue
            out.setdefault(st.path, []).append(
                LogWrite(inst.time, st.log_offset, st.file_size, st.num_writes, st.num_deletes, st.min_event_time)
            )
    return {path: tuple(sorted(ws, key=lambda w: (w.offset, w.instant))) for path, ws in out.items()}
