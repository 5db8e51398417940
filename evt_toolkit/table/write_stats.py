"""Facts recorded in completed commits' write stats, indexed for readers and table services."""

from __future__ import annotations

from typing import Any, Literal

from evt_toolkit.errors import EvtError
from evt_toolkit.format.extra_metadata import WRITE_DELETE_EVENT_TIMES, DeleteEventTimes, decode_delete_event_times
from evt_toolkit.table.timeline import Timeline

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
