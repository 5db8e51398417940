"""Compaction triggers and scheduling guards (Hudi ``ScheduleCompactionActionExecutor``, ``CompactionUtils``)."""

from __future__ import annotations

import pytest

from evt_toolkit.compaction.trigger import (
    CompactionTriggerStrategy,
    TimelineFacts,
    check_can_schedule,
    instant_to_seconds,
    schedule_decision,
    should_compact,
)
from evt_toolkit.errors import PendingTableServiceError, TimelineError
from evt_toolkit.table.timeline import Instant, InstantState, Timeline

C, R, INF = InstantState.COMPLETED, InstantState.REQUESTED, InstantState.INFLIGHT


def tl(*instants: tuple[str, str, InstantState]) -> Timeline:
    return Timeline([Instant(t, a, s, None, f".hoodie/{t}.{a}") for t, a, s in instants], 1)


def ts(minutes: int) -> str:
    """An instant ``minutes`` after 2025-01-01 00:00."""
    h, m = divmod(minutes, 60)
    return f"20250101{h:02d}{m:02d}00000"


def test_instant_to_seconds() -> None:
    assert instant_to_seconds(ts(61)) - instant_to_seconds(ts(0)) == 3660
    assert instant_to_seconds("20250101000000") == instant_to_seconds("20250101000000000")
    with pytest.raises(TimelineError, match="not an instant"):
        instant_to_seconds("2025-01-01")


def test_facts_from_timeline() -> None:
    timeline = tl(
        (ts(0), "deltacommit", C),
        (ts(1), "deltacommit", C),
        (ts(2), "commit", C),  # a completed compaction
        (ts(3), "deltacommit", C),
        (ts(4), "compaction", R),
        (ts(5), "deltacommit", C),
        (ts(6), "deltacommit", INF),
        (ts(7), "replacecommit", R),
    )
    f = TimelineFacts.from_timeline(timeline, ts(10))
    assert f.delta_commits_since_last_compaction == 2  # completed deltacommits after the last completed commit
    assert f.last_compaction == ts(2)
    assert f.delta_commits_since_last_request == 2  # after the pending compaction at ts(4), any state
    assert f.seconds_since_last_compaction == 8 * 60
    assert f.pending_compactions == (ts(4),)
    assert f.pending_clustering == (ts(7),)
    assert f.inflight_writes == (ts(6),)
    assert f.conflicting_instants == ()
    assert TimelineFacts.from_timeline(timeline, ts(4)).conflicting_instants == (ts(4), ts(5))


def test_no_completed_compaction_counts_from_first_deltacommit() -> None:
    f = TimelineFacts.from_timeline(tl((ts(0), "deltacommit", C), (ts(30), "deltacommit", C)), ts(60))
    assert f.delta_commits_since_last_compaction == 2
    assert f.last_compaction == ts(0)
    assert f.seconds_since_last_compaction == 3600


def test_nothing_fires_without_deltacommits() -> None:
    f = TimelineFacts.from_timeline(tl(), ts(0))
    for kind in CompactionTriggerStrategy:
        d = should_compact(kind, f)
        assert not d.fire and "no deltacommit" in d.reason


def facts(n: int, seconds: int, *, since_request: int | None = None) -> TimelineFacts:
    return TimelineFacts(
        instant=ts(0),
        delta_commits_since_last_compaction=n,
        last_compaction=ts(0),
        delta_commits_since_last_request=since_request,
        seconds_since_last_compaction=seconds,
    )


@pytest.mark.parametrize(
    ("kind", "n", "seconds", "fire"),
    [
        ("NUM_COMMITS", 5, 0, True),  # default hoodie.compact.inline.max.delta.commits = 5
        ("NUM_COMMITS", 4, 10**6, False),
        ("TIME_ELAPSED", 0, 3600, True),  # default hoodie.compact.inline.max.delta.seconds = 3600
        ("TIME_ELAPSED", 100, 3599, False),
        ("NUM_AND_TIME", 5, 3600, True),
        ("NUM_AND_TIME", 5, 3599, False),
        ("NUM_OR_TIME", 4, 3600, True),
        ("NUM_OR_TIME", 4, 3599, False),
    ],
)
def test_hudi_triggers(kind: str, n: int, seconds: int, fire: bool) -> None:
    d = should_compact(kind, facts(n, seconds))
    assert d.fire is fire
    assert d.reason


def test_num_commits_after_last_request_counts_from_pending_plan() -> None:
    assert not should_compact("NUM_COMMITS_AFTER_LAST_REQUEST", facts(9, 0, since_request=2)).fire
    d = should_compact("NUM_COMMITS_AFTER_LAST_REQUEST", facts(9, 0, since_request=5))
    assert d.fire and "requested" in d.reason
    assert should_compact("NUM_COMMITS", facts(2, 0), max_delta_commits=2).fire


def test_event_time_trigger_refuses_while_compaction_or_clustering_pending() -> None:
    timeline = tl((ts(0), "deltacommit", C), (ts(1), "compaction", R), (ts(2), "deltacommit", C))
    d = should_compact("EVENT_TIME_TRIGGER", TimelineFacts.from_timeline(timeline, ts(5)))
    assert not d.fire
    assert ts(1) in d.reason and "one after the other" in d.reason
    timeline = tl((ts(0), "deltacommit", C), (ts(1), "replacecommit", INF))
    d = should_compact("EVENT_TIME_TRIGGER", TimelineFacts.from_timeline(timeline, ts(5)))
    assert not d.fire and f"clustering {ts(1)}" in d.reason


def test_event_time_trigger_fires_when_new_data_and_nothing_pending() -> None:
    timeline = tl((ts(0), "deltacommit", C), (ts(1), "commit", C), (ts(2), "deltacommit", C))
    assert should_compact("EVENT_TIME_TRIGGER", TimelineFacts.from_timeline(timeline, ts(5))).fire
    timeline = tl((ts(0), "deltacommit", C), (ts(1), "commit", C))
    d = should_compact("EVENT_TIME_TRIGGER", TimelineFacts.from_timeline(timeline, ts(5)))
    assert not d.fire and "nothing new" in d.reason


def test_check_can_schedule_refuses_inflight_write_before_instant() -> None:
    timeline = tl((ts(0), "deltacommit", C), (ts(1), "deltacommit", INF), (ts(9), "deltacommit", R))
    with pytest.raises(PendingTableServiceError, match=ts(1)) as err:
        check_can_schedule(timeline, ts(5))
    assert ts(9) not in str(err.value)  # a write requested after the plan does not straddle it
    assert not schedule_decision(TimelineFacts.from_timeline(timeline, ts(5))).fire


def test_check_can_schedule_refuses_pending_replacecommit_before_instant() -> None:
    with pytest.raises(PendingTableServiceError, match=ts(1)):
        check_can_schedule(tl((ts(0), "deltacommit", C), (ts(1), "replacecommit", R)), ts(5))


def test_check_can_schedule_refuses_instant_not_after_completed_or_pending_compaction() -> None:
    with pytest.raises(TimelineError, match=f"{ts(5)}.*at or after"):
        check_can_schedule(tl((ts(0), "deltacommit", C), (ts(5), "deltacommit", C)), ts(5))
    with pytest.raises(TimelineError, match=ts(7)):
        check_can_schedule(tl((ts(0), "deltacommit", C), (ts(7), "compaction", R)), ts(5))
    with pytest.raises(TimelineError, match="not an instant"):
        check_can_schedule(tl(), "soon")


def test_check_can_schedule_accepts() -> None:
    d = check_can_schedule(tl((ts(0), "deltacommit", C), (ts(1), "clean", C)), ts(5))
    assert d.fire and bool(d)
