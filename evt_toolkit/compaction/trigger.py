"""When a compaction may be scheduled: Hudi's trigger strategies, the event-time trigger, and the scheduling checks.

All decisions are pure functions of :class:`TimelineFacts`, which :meth:`TimelineFacts.from_timeline` derives from a
loaded :class:`~evt_toolkit.table.timeline.Timeline` and the instant the new plan would get.

* Hudi's ``CompactionTriggerStrategy`` (``ScheduleCompactionActionExecutor.needCompact``): ``NUM_COMMITS``,
  ``NUM_COMMITS_AFTER_LAST_REQUEST``, ``TIME_ELAPSED``, ``NUM_AND_TIME``, ``NUM_OR_TIME`` with
  ``hoodie.compact.inline.max.delta.commits`` (5) and ``hoodie.compact.inline.max.delta.seconds`` (3600).
* ``EVENT_TIME_TRIGGER`` (RFC HUDI-6979, design §2.3): refuses while any compaction or clustering plan is pending,
  because "all data ≤ T is compacted" only holds when event-time plans run one after the other.
* :func:`check_can_schedule`: Hudi's own guard in ``ScheduleCompactionActionExecutor.execute`` (0.14, Spark, no
  OCC): no write may be inflight before the new instant, and no completed write or pending compaction may be at or
  after it.

Example:
    >>> facts = TimelineFacts(instant="20250101010000000", delta_commits_since_last_compaction=6,
    ...                       last_compaction="20250101000000000")
    >>> should_compact(CompactionTriggerStrategy.NUM_COMMITS, facts).fire
    True
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from evt_toolkit.errors import PendingTableServiceError, TimelineError
from evt_toolkit.table.timeline import (
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    WRITE_ACTIONS,
    Timeline,
)

__all__ = [
    "DEFAULT_MAX_DELTA_COMMITS",
    "DEFAULT_MAX_DELTA_SECONDS",
    "CompactionTriggerStrategy",
    "TimelineFacts",
    "TriggerDecision",
    "check_can_schedule",
    "instant_to_seconds",
    "schedule_decision",
    "should_compact",
]

#: ``hoodie.compact.inline.max.delta.commits``.
DEFAULT_MAX_DELTA_COMMITS = 5
#: ``hoodie.compact.inline.max.delta.seconds``.
DEFAULT_MAX_DELTA_SECONDS = 3600

_INSTANT_RE = re.compile(r"^(\d{14})(\d{3})?$")


class CompactionTriggerStrategy(enum.StrEnum):
    """Hudi's ``CompactionTriggerStrategy`` values (ordinals 0–4) plus the RFC's ``EVENT_TIME_TRIGGER``."""

    NUM_COMMITS = "NUM_COMMITS"
    NUM_COMMITS_AFTER_LAST_REQUEST = "NUM_COMMITS_AFTER_LAST_REQUEST"
    TIME_ELAPSED = "TIME_ELAPSED"
    NUM_AND_TIME = "NUM_AND_TIME"
    NUM_OR_TIME = "NUM_OR_TIME"
    EVENT_TIME_TRIGGER = "EVENT_TIME_TRIGGER"


@dataclass(frozen=True, slots=True)
class TriggerDecision:
    """Whether to schedule, and why (in words a data engineer can act on)."""

    fire: bool
    reason: str

    def __bool__(self) -> bool:
        return self.fire


def instant_to_seconds(instant: str) -> int:
    """Seconds since the epoch of an instant ``yyyyMMddHHmmss[SSS]``, read as UTC.

    Hudi parses instants in the timeline's time zone; only differences are used here, which do not depend on it
    (apart from daylight-saving jumps, which Java's local-time parse has too).

    Raises:
        TimelineError: not an instant time.

    Example:
        >>> instant_to_seconds("19700101000100000")
        60
    """
    m = _INSTANT_RE.match(instant)
    if m is None:
        raise TimelineError(f"{instant!r} is not an instant time (yyyyMMddHHmmssSSS)")
    try:
        dt = datetime.strptime(m.group(1), "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError as exc:
        raise TimelineError(f"{instant!r} is not a valid instant time: {exc}") from exc
    return int(dt.timestamp())


@dataclass(frozen=True, slots=True)
class TimelineFacts:
    """What the trigger decisions look at, for a compaction that would be scheduled at ``instant``.

    Attributes:
        instant: the new plan's instant time.
        delta_commits_since_last_compaction: completed deltacommits after the last completed compaction (or all of
            them when none completed); ``None`` when the table has no deltacommit at all (Hudi: never compact).
        last_compaction: the last completed ``commit``/``replacecommit`` (``getCommitTimeline``), or the first
            deltacommit when there is none — the reference point of ``TIME_ELAPSED``.
        delta_commits_since_last_request: deltacommits (any state) after the last *pending* compaction, or after
            the last completed one when none is pending (``getDeltaCommitsSinceLatestCompactionRequest``).
        seconds_since_last_compaction: ``instant`` − ``last_compaction`` in seconds.
        pending_compactions: requested/inflight compaction instants.
        pending_log_compactions: requested/inflight log compaction instants.
        pending_clustering: requested/inflight replacecommit or clustering instants.
        inflight_writes: requested/inflight ``deltacommit``/``commit`` instants earlier than ``instant``.
        conflicting_instants: completed write instants and pending compactions at or after ``instant``.
    """

    instant: str
    delta_commits_since_last_compaction: int | None = None
    last_compaction: str | None = None
    delta_commits_since_last_request: int | None = None
    seconds_since_last_compaction: int | None = None
    pending_compactions: tuple[str, ...] = ()
    pending_log_compactions: tuple[str, ...] = ()
    pending_clustering: tuple[str, ...] = ()
    inflight_writes: tuple[str, ...] = ()
    conflicting_instants: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.seconds_since_last_compaction is None and self.last_compaction is not None:
            elapsed = instant_to_seconds(self.instant) - instant_to_seconds(self.last_compaction)
            object.__setattr__(self, "seconds_since_last_compaction", elapsed)
        if self.delta_commits_since_last_request is None and self.delta_commits_since_last_compaction is not None:
            object.__setattr__(self, "delta_commits_since_last_request", self.delta_commits_since_last_compaction)

    @classmethod
    def from_timeline(cls, timeline: Timeline, instant: str) -> TimelineFacts:
        """Derive the facts from a loaded timeline.

        Args:
            timeline: the table's active timeline.
            instant: the instant the compaction would be scheduled at.
        """
        instant_to_seconds(instant)  # validates the format
        insts = timeline.instants
        completed_commits = [i for i in insts if i.is_completed and i.action in (COMMIT, REPLACE_COMMIT)]
        delta = [i for i in insts if i.action == DELTA_COMMIT]
        completed_delta = [i for i in delta if i.is_completed]
        pending_comp = [i for i in insts if i.action == COMPACTION and not i.is_completed]

        last_completed = completed_commits[-1].time if completed_commits else None
        since: int | None
        if last_completed is not None:
            since = sum(1 for i in completed_delta if i.time > last_completed)
            reference: str | None = last_completed
        elif delta:
            since = len(completed_delta)
            reference = delta[0].time
        else:
            since, reference = None, None

        request_ref = pending_comp[-1].time if pending_comp else last_completed
        if request_ref is not None:
            since_request: int | None = sum(1 for i in delta if i.time > request_ref)
        elif delta:
            since_request = len(delta)
        else:
            since_request = None

        conflicting = tuple(
            i.time
            for i in insts
            if i.action in WRITE_ACTIONS
            and (i.is_completed or i.action in (COMPACTION, LOG_COMPACTION))
            and i.time >= instant
        )
        return cls(
            instant=instant,
            delta_commits_since_last_compaction=since,
            last_compaction=reference,
            delta_commits_since_last_request=since_request,
            pending_compactions=tuple(i.time for i in pending_comp),
            pending_log_compactions=tuple(i.time for i in insts if i.action == LOG_COMPACTION and not i.is_completed),
            pending_clustering=tuple(
                i.time for i in insts if i.action in (REPLACE_COMMIT, CLUSTERING) and not i.is_completed
            ),
            inflight_writes=tuple(
                i.time for i in insts if i.action in (DELTA_COMMIT, COMMIT) and not i.is_completed and i.time < instant
            ),
            conflicting_instants=conflicting,
        )


def _num(facts: TimelineFacts, max_commits: int, since_request: bool) -> tuple[bool, str]:
    n = facts.delta_commits_since_last_request if since_request else facts.delta_commits_since_last_compaction
    what = "the last requested or completed compaction" if since_request else "the last completed compaction"
    n = n or 0
    ok = n >= max_commits
    return ok, f"{n} deltacommit(s) since {what} ({'≥' if ok else '<'} {max_commits})"


def _time(facts: TimelineFacts, max_seconds: int) -> tuple[bool, str]:
    s = facts.seconds_since_last_compaction or 0
    ok = s >= max_seconds
    ref = facts.last_compaction or "?"
    return ok, f"{s} s since {ref} ({'≥' if ok else '<'} {max_seconds} s)"


def should_compact(
    strategy: CompactionTriggerStrategy | str,
    facts: TimelineFacts,
    *,
    max_delta_commits: int = DEFAULT_MAX_DELTA_COMMITS,
    max_delta_seconds: int = DEFAULT_MAX_DELTA_SECONDS,
) -> TriggerDecision:
    """Whether the trigger fires (``ScheduleCompactionActionExecutor.needCompact`` plus ``EVENT_TIME_TRIGGER``).

    Like Hudi, nothing fires on a table without any deltacommit. ``EVENT_TIME_TRIGGER`` refuses while a compaction,
    clustering or log compaction plan is pending (serial rule, as the event-time schedule) and otherwise fires when at
    least one deltacommit completed since the last compaction — the threshold, not a commit count, decides what the
    plan takes.

    Args:
        strategy: the trigger.
        facts: the timeline facts.
        max_delta_commits: ``hoodie.compact.inline.max.delta.commits``.
        max_delta_seconds: ``hoodie.compact.inline.max.delta.seconds``.

    Example:
        >>> f = TimelineFacts(instant="20250101000000000", delta_commits_since_last_compaction=1,
        ...                   last_compaction="20241231000000000", pending_compactions=("20241231120000000",))
        >>> should_compact("EVENT_TIME_TRIGGER", f).reason.split(";")[0]
        'a compaction or clustering plan is pending (compaction 20241231120000000)'
    """
    kind = CompactionTriggerStrategy(strategy)
    if facts.delta_commits_since_last_compaction is None:
        return TriggerDecision(False, "the table has no deltacommit yet: nothing to compact")
    if kind is CompactionTriggerStrategy.EVENT_TIME_TRIGGER:
        pending = [f"compaction {t}" for t in facts.pending_compactions]
        pending += [f"clustering {t}" for t in facts.pending_clustering]
        pending += [f"log compaction {t}" for t in facts.pending_log_compactions]
        if pending:
            return TriggerDecision(
                False,
                f"a compaction or clustering plan is pending ({', '.join(pending)}); event-time plans must run one "
                'after the other, or "every event ≤ T is compacted" would not hold',
            )
        n = facts.delta_commits_since_last_compaction
        if n == 0:
            return TriggerDecision(False, "no deltacommit completed since the last compaction: nothing new to compact")
        return TriggerDecision(
            True, f"no compaction or clustering pending; {n} deltacommit(s) since the last compaction"
        )
    if kind is CompactionTriggerStrategy.NUM_COMMITS:
        ok, why = _num(facts, max_delta_commits, since_request=False)
        return TriggerDecision(ok, why)
    if kind is CompactionTriggerStrategy.NUM_COMMITS_AFTER_LAST_REQUEST:
        ok, why = _num(facts, max_delta_commits, since_request=True)
        return TriggerDecision(ok, why)
    if kind is CompactionTriggerStrategy.TIME_ELAPSED:
        ok, why = _time(facts, max_delta_seconds)
        return TriggerDecision(ok, why)
    num_ok, num_why = _num(facts, max_delta_commits, since_request=False)
    time_ok, time_why = _time(facts, max_delta_seconds)
    if kind is CompactionTriggerStrategy.NUM_AND_TIME:
        return TriggerDecision(num_ok and time_ok, f"{num_why} and {time_why}")
    return TriggerDecision(num_ok or time_ok, f"{num_why} or {time_why}")


def schedule_decision(facts: TimelineFacts) -> TriggerDecision:
    """Hudi's scheduling guard as a decision (see :func:`check_can_schedule`)."""
    if facts.inflight_writes:
        return TriggerDecision(
            False,
            f"write(s) {', '.join(facts.inflight_writes)} are still inflight before {facts.instant}; a plan scheduled "
            "now would miss their log blocks (complete or roll them back first)",
        )
    if facts.conflicting_instants:
        return TriggerDecision(
            False,
            f"instant(s) {', '.join(facts.conflicting_instants)} are completed writes or pending compactions at or "
            f"after {facts.instant}; a compaction instant must be later than all of them",
        )
    return TriggerDecision(True, f"no inflight write before {facts.instant} and no later completed instant")


def check_can_schedule(timeline: Timeline, instant: str) -> TriggerDecision:
    """Refuse to schedule a compaction at ``instant`` when Hudi would.

    ``ScheduleCompactionActionExecutor.execute`` (0.14, Spark, no optimistic concurrency control) requires that
    the earliest pending write (``deltacommit``/``commit``/``replacecommit``, compactions excluded) be later than the
    compaction instant, and that no completed write instant or pending compaction be at or after it.

    Raises:
        PendingTableServiceError: a write is inflight before ``instant`` (its blocks would be missed).
        TimelineError: ``instant`` is malformed or not later than every completed write / pending compaction.

    Example:
        >>> check_can_schedule(Timeline([], 1), "20250101000000000").fire
        True
    """
    facts = TimelineFacts.from_timeline(timeline, instant)
    pending_replace = tuple(t for t in facts.pending_clustering if t < instant)
    if facts.inflight_writes or pending_replace:
        writes = sorted(facts.inflight_writes + pending_replace)
        raise PendingTableServiceError(
            f"cannot schedule compaction {instant}: write(s) {', '.join(writes)} are still inflight and earlier; "
            "a plan now would miss their log blocks (let them complete or roll them back first)"
        )
    decision = schedule_decision(facts)
    if not decision.fire:
        raise TimelineError(f"cannot schedule compaction {instant}: {decision.reason}")
    return decision
