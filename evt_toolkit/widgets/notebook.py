"""Helpers the notebooks share: which event-time field to use, what the RO view can promise (in words and as data),
and a Spark session that does not spill the JVM's start-up chatter into a notebook as a red block.

:func:`freshness_statement` is what notebook 05 prints after previewing a table: the RO freshness the table
publishes now (``t.ro_freshness()``) and what an event-time compaction at T would let it promise (the preview) —
or, for a table with nothing to compact, why there is no promise. It never promises more than the preview does:
a plan that compacts nothing promises nothing.

Example:
    >>> choice = choose_event_time_field(t)  # doctest: +SKIP
    >>> print(freshness_statement(t, choice.field).text)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from evt_toolkit.compaction.event_times import reporting_event_time_field
from evt_toolkit.compaction.strategy import EventTimeBasedCompactionStrategy, to_epoch_ms
from evt_toolkit.errors import EvtError
from evt_toolkit.widgets.models import format_count, format_ms, freshness_sentence

if TYPE_CHECKING:
    from evt_toolkit.api import HudiTable

__all__ = [
    "COPY_COMPACTION_MIME",
    "FRESHNESS_MIME",
    "CopyCompaction",
    "EventTimeChoice",
    "FreshnessStatement",
    "choose_event_time_field",
    "compact_a_copy",
    "display_copy_compaction",
    "display_freshness",
    "freshness_statement",
    "quiet_spark_session",
]

#: MIME type of the freshness data :func:`display_freshness` attaches to its text (read by the notebook tests).
FRESHNESS_MIME = "application/vnd.evt.freshness+json"
#: MIME type of the data :func:`display_copy_compaction` attaches to its text.
COPY_COMPACTION_MIME = "application/vnd.evt.copy-compaction+json"
#: Tables larger than this are not copied by notebook 05 (a copy on local disk, compacted and read back in full).
COPY_LIMIT_BYTES = 1 << 30


@dataclass(frozen=True, slots=True)
class EventTimeChoice:
    """The event-time field a notebook works with, where it came from, and what went wrong with a rejected one.

    Attributes:
        field: the field (``None``: none usable; min event times then come only from ``MIN_EVENT_TIME`` headers
            and ``minEventTime`` write stats).
        source: ``given``, ``table`` (``hoodie.payload.event.time.field``), ``ordering field`` or ``none``.
        problem: why a candidate field was rejected (e.g. a string ordering field), else ``None``.
        blocks: ``inspect.log_blocks`` read with the chosen field (reused by the notebook).
    """

    field: str | None
    source: str
    problem: str | None
    blocks: pa.Table

    def text(self) -> str:
        """The choice in words, with what to do when it is not the right one."""
        if self.problem is not None:
            return (
                f"event-time field: none usable — {self.problem}. Set EVENT_TIME_FIELD (parameters cell) to a field "
                "holding epoch numbers, timestamps or dates; until then min event times come only from "
                "MIN_EVENT_TIME headers and minEventTime write stats"
            )
        if self.field is None:
            return (
                "event-time field: none (the table declares no hoodie.payload.event.time.field and has no ordering "
                "field); set EVENT_TIME_FIELD to see min event times"
            )
        how = {
            "given": "as given",
            "table": "the table's hoodie.payload.event.time.field",
            "ordering field": "the table declares none, so its ordering field (set EVENT_TIME_FIELD if that is wrong)",
        }[self.source]
        return f"event-time field: {self.field} ({how})"


def choose_event_time_field(table: HudiTable, given: str | None = None) -> EventTimeChoice:
    """``given``, else the table's event-time field, else its ordering field — the rule ``evt`` follows too — kept
    only when the table's log blocks can be read with it (a string field cannot be an event time)."""
    c = table.config
    candidate, source = reporting_event_time_field(table, given)
    try:
        blocks = table.inspect.log_blocks(event_time_field=candidate)
        return EventTimeChoice(candidate, source, None, blocks)
    except EvtError as exc:
        if candidate is None:
            raise
        problem = f"{candidate!r} ({source}) cannot be read as an event time: {exc}"
    # Without a usable field, the table's own declaration (if any, and different) is the only other source.
    fallback = c.event_time_field if c.event_time_field != candidate else None
    try:
        blocks = table.inspect.log_blocks(event_time_field=fallback)
    except EvtError:
        fallback = None
        blocks = table.inspect.log_blocks(event_time_field=None)
    return EventTimeChoice(fallback, "table" if fallback else "none", problem, blocks)


@dataclass(frozen=True, slots=True)
class FreshnessStatement:
    """What the RO view promises now, and what an event-time compaction at T would let it promise.

    Attributes:
        kind: ``copy_on_write``, ``no_logs``, ``no_event_times`` or ``plan``.
        event_time_field: the field the preview read min event times from (``None``: the table's, if any).
        now_ms: the RO freshness the table publishes now (``t.ro_freshness().threshold_ms``).
        now_reason: why there is none now.
        threshold_ms: T previewed (``None`` when no preview applies).
        logs_compacted: logs the plan at T would compact.
        promise_ms: the freshness the plan would give (the preview's, and only when the plan compacts something).
        blockers: why the plan gives none, when it compacts something.
        text: all of it in words.
    """

    kind: str
    event_time_field: str | None
    now_ms: int | None
    now_reason: str | None
    threshold_ms: int | None
    logs_compacted: int
    promise_ms: int | None
    blockers: tuple[str, ...]
    text: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def freshness_statement(
    table: HudiTable, event_time_field: str | None, threshold: Any = None, *, now_ms: int | None = None
) -> FreshnessStatement:
    """The RO freshness now and after an event-time compaction at ``threshold`` (default: the middle of the logs'
    min event times), from ``t.ro_freshness()`` and ``t.compaction.preview`` — see :class:`FreshnessStatement`."""
    fresh = table.ro_freshness(now_ms=now_ms)
    now_line = "now: " + freshness_sentence(fresh)
    c = table.config

    def make(
        kind: str,
        text: str,
        threshold_ms: int | None = None,
        logs_compacted: int = 0,
        promise_ms: int | None = None,
        blockers: tuple[str, ...] = (),
    ) -> FreshnessStatement:
        return FreshnessStatement(
            kind,
            event_time_field,
            fresh.threshold_ms,
            fresh.reason,
            threshold_ms,
            logs_compacted,
            promise_ms,
            blockers,
            text,
        )

    if c.table_type != "MERGE_ON_READ":
        text = (
            f"{now_line}\nthis is a {c.table_type} table: every write rewrites base files and there are no log files, "
            "so its read-optimized view already is its snapshot; event-time compaction is for MERGE_ON_READ tables"
        )
        return make("copy_on_write", text)
    kwargs: dict[str, Any] = {} if now_ms is None else {"now_ms": now_ms}
    probe = table.compaction.preview(
        EventTimeBasedCompactionStrategy(data_latency=0, event_time_field=event_time_field), **kwargs
    )
    known = probe.per_log.filter(pc.is_valid(probe.per_log["min_event_time"]))
    known = known.filter(known["has_data"])
    if probe.summary.logs_total == 0:
        text = f"{now_line}\nthe table has no log files: there is nothing to compact, and no plan to promise anything"
        return make("no_logs", text)
    if known.num_rows == 0:
        with_data = int(pc.sum(probe.per_log["has_data"]).as_py() or 0)
        if not with_data:
            why = "they hold deletes or commands only, no data with an event time"
        elif event_time_field is None:
            why = (
                "no event-time field is set (EVENT_TIME_FIELD), and they carry neither a MIN_EVENT_TIME header nor a "
                "minEventTime write stat"
            )
        else:
            why = (
                f"none of their blocks gives a min event time for {event_time_field!r}: a delete block written by "
                "stock Hudi carries keys and ordering values, not event times"
            )
        text = (
            f"{now_line}\nnone of the {probe.summary.logs_total:,} log file(s) has a known min event time ({why}): an "
            "event-time compaction cannot select anything, so no plan can promise a freshness"
        )
        return make("no_event_times", text)
    mins = known["min_event_time"].to_pylist()
    lo, hi = min(mins), max(mins)
    t = lo + (hi - lo) // 2 if threshold is None else to_epoch_ms(threshold)
    s = table.compaction.preview(
        EventTimeBasedCompactionStrategy(threshold=t, event_time_field=event_time_field), **kwargs
    ).summary
    head = (
        f"after an event-time compaction at T = {format_ms(t)} ({format_count(s.logs_compacted)} of "
        f"{format_count(s.logs_total)} log files compacted):"
    )
    promise: int | None = None
    blockers: tuple[str, ...] = ()
    if not s.logs_compacted:
        after = f"{head} nothing to compact at this T, so nothing changes"
    elif s.ro_freshness_ms is not None:
        promise = s.ro_freshness_ms
        after = f"{head} the RO view would hold every event ≤ {format_ms(promise)}"
    else:
        blockers = tuple(s.freshness_blockers)
        after = f"{head} no freshness can be promised — {'; '.join(blockers)}"
    return make("plan", f"{now_line}\n{after}", t, s.logs_compacted, promise, blockers)


def display_freshness(statement: FreshnessStatement) -> None:
    """Show the statement as text, with its figures attached as data (what notebook tests read back)."""
    from IPython.display import display

    display({"text/plain": statement.text, FRESHNESS_MIME: statement.as_dict()}, raw=True)


@contextlib.contextmanager
def _captured_stdio() -> Iterator[list[str]]:
    """File descriptors 1 and 2 sent to a temporary file (the JVM writes there directly, past ``sys.stderr``)."""
    captured: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(tmp.fileno(), 1)
            os.dup2(tmp.fileno(), 2)
            yield captured
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            captured.append(tmp.read().decode("utf-8", "replace"))


def quiet_spark_session(**kwargs: Any) -> Any:
    """:func:`evt_toolkit.spark.session.get_or_create_session` with the JVM's start-up messages kept out of the
    notebook (log4j's default profile notice, the incubator-module warning). If the start fails, they are raised with
    the error, since then they are the diagnosis."""
    from evt_toolkit.spark.session import get_or_create_session

    error: Exception | None = None
    with _captured_stdio() as log:
        try:
            spark = get_or_create_session(**kwargs)
        except Exception as exc:  # re-raised below with the JVM's output, which is then the diagnosis
            error = exc
    if error is not None:
        raise RuntimeError("Spark did not start; its output:\n" + "".join(log)[-4000:]) from error
    return spark


@dataclass(frozen=True, slots=True)
class CopyCompaction:
    """An event-time compaction at T run on a private copy of a table (the table itself is never written).

    Attributes:
        done: the copy was compacted.
        reason: why not, when it was not.
        instant: the compaction instant on the copy.
        operations: file slices compacted.
        links: leftover logs linked into the new slices.
        snapshot_rows: rows of the snapshot before the run.
        snapshot_unchanged: the snapshot after the run holds exactly the same records (keys, commit times, values).
        ro_rows_before, ro_rows_after: rows of the read-optimized view before and after.
        freshness_ms: the RO freshness the copy publishes afterwards.
        text: all of it in words.
    """

    done: bool
    reason: str | None
    instant: str | None = None
    operations: int = 0
    links: int = 0
    snapshot_rows: int | None = None
    snapshot_unchanged: bool | None = None
    ro_rows_before: int | None = None
    ro_rows_after: int | None = None
    freshness_ms: int | None = None
    text: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-able dict."""
        return asdict(self)


def _records(t: pa.Table) -> list[tuple[Any, ...]]:
    cols = [c for c in t.column_names if c not in ("_hoodie_file_name", "_hoodie_commit_seqno")]
    return sorted(tuple(str(v) for v in row) for row in zip(*(t[c].to_pylist() for c in cols), strict=True))


def compact_a_copy(table: HudiTable, event_time_field: str | None, threshold_ms: int | None) -> CopyCompaction:
    """Copy ``table`` to a temporary folder, run an event-time compaction at ``threshold_ms`` there, and report what
    it did: the snapshot unchanged, the read-optimized view grown, the freshness published. The copy is deleted
    afterwards; ``table`` itself is only read. A table the toolkit cannot compact says why (no exception)."""

    def no(reason: str) -> CopyCompaction:
        return CopyCompaction(False, reason, text=f"compaction of a copy: not run — {reason}")

    if table.config.table_type != "MERGE_ON_READ":
        return no("a Copy-On-Write table has no log files to compact")
    if table.storage.is_object_store:
        return no("the copy is made on local disk; copy an object-store table with your own tools to try one")
    if threshold_ms is None:
        return no("there is no threshold T to compact at (no log carries an event time)")
    slices = table.file_slices()
    size = (pc.sum(slices["total_log_size"]).as_py() or 0) + (pc.sum(slices["base_file_size"]).as_py() or 0)
    if size > COPY_LIMIT_BYTES:
        return no(
            f"the table's latest slices hold {size:,} bytes; notebook 05 copies tables up to {COPY_LIMIT_BYTES:,}"
        )
    with tempfile.TemporaryDirectory(prefix="evt-copy-") as tmp:
        dst = os.path.join(tmp, "table")
        shutil.copytree(table.path, dst, symlinks=True)
        copy = type(table).open(dst)
        try:
            before = copy.read()
            ro_before = copy.read("read_optimized").num_rows
            strategy = EventTimeBasedCompactionStrategy(threshold=threshold_ms, event_time_field=event_time_field)
            c = copy.compaction.schedule(strategy)
            if c is None:
                return no(f"a plan at T = {format_ms(threshold_ms)} compacts nothing")
            copy.compaction.run(c)
            after = copy.read()
            ro_after = copy.read("read_optimized").num_rows
            fresh = copy.ro_freshness().threshold_ms
        except EvtError as exc:
            return no(str(exc).replace(dst, "<copy>"))
        unchanged = _records(before) == _records(after)
    text = (
        f"compaction of a copy at T = {format_ms(threshold_ms)}: {format_count(c.operations)} file slice(s) compacted, "
        f"{format_count(len(c.links))} leftover log(s) linked; snapshot {format_count(before.num_rows)} rows, "
        f"{'unchanged' if unchanged else 'CHANGED'}; read-optimized view {format_count(ro_before)} → "
        f"{format_count(ro_after)} rows; RO freshness: "
        + (f"every event ≤ {format_ms(fresh)}" if fresh is not None else "none published")
    )
    return CopyCompaction(
        True, None, c.instant, c.operations, len(c.links), before.num_rows, unchanged, ro_before, ro_after, fresh, text
    )


def display_copy_compaction(result: CopyCompaction) -> None:
    """Show the result as text, with its figures attached as data (what notebook tests read back)."""
    from IPython.display import display

    display({"text/plain": result.text, COPY_COMPACTION_MIME: result.as_dict()}, raw=True)
