"""Hudi 1.x tables (versions 8 and 9) when requested order and completion order differ.

On a 1.x table a log joins the file slice whose base instant is the latest at or before its deltacommit's
*completion* time, and replays in the slice by the instant in its *name* (the requested time,
``HoodieLogFile.LogFileComparator``). A compaction ``C`` names its links and carry-over log with ``C`` and completes
at ``C`` (``docs/hudi-1x.md`` §4.4), so a log named with an instant before ``C`` that joins slice ``C`` replays
before them: the leftovers (older data) overwrite it. The fences keep such a log out: no schedule while a write is
pending, no run while a write requested before ``C`` is pending or completed after it in the plan's file groups.

Driven deterministically in one process, by pausing an operation between two of its steps and running the others
through another handle of the table:

* a write that took its instant before a compaction was scheduled and wrote its ``requested`` file after it — the
  compaction scheduled and run (or only scheduled) in between — on tables the toolkit creates (both link modes,
  both orderings, full and event-time plans) and on a copy of a stock v9 table with a metadata table;
* a write paused after its ``requested`` file or after its logs, while a schedule is attempted;
* time travel while a write requested before a completed one is still pending;
* two writes creating the file group of one bucket;
* the same race through a Spark DataFrame write and a compaction run on Spark;

Checked: our snapshot and hudi-rs's (through the metadata table where there is one) equal a plain model of what was
committed, replayed in requested order; an operation refused in such a state raises an ``EvtError`` and leaves the
table's answers as they were; the documented recovery (roll the write back and write again; unschedule and schedule
again) ends at the model's answer; the metadata table lists exactly the committed files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import evt_toolkit as evt
import evt_toolkit.write.writer as writer_module
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import CompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.errors import EvtError, PendingTableServiceError, PlanValidationError, WriteError
from tests.oracle import Oracle
from tests.tables import BASE, COLUMNS, create, hudi_rs, rows

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")


def _answer(t: pa.Table) -> dict[int, tuple[int, float]]:
    return {r["id"]: (r["ts"], r["v"]) for r in t.select(["id", "ts", "v"]).to_pylist()}


def _model(history: list[tuple[str, pd.DataFrame]], merge_mode: str) -> dict[int, tuple[int, float]]:
    o = Oracle(["id"], ["region"], "ts", merge_mode)
    for op, df in history:
        o.apply(op, df)
    r = o.result()
    return {int(x["id"]): (int(x["ts"]), float(x["v"])) for x in r.to_dict("records")} if len(r) else {}


def _check(t: evt.HudiTable, want: dict[int, tuple[int, float]], what: str) -> None:
    fresh = evt.HudiTable.open(t.path)
    assert _answer(fresh.read(columns=COLUMNS)) == want, f"{what}: our snapshot"
    assert _answer(hudi_rs(t.path)) == want, f"{what}: hudi-rs's snapshot"


@contextmanager
def _between_instant_and_requested(step: Callable[[], Any]) -> Iterator[list[Any]]:
    """Run ``step`` once, in the next write, after it took its instant and before it wrote its ``requested`` file."""
    real = writer_module.new_instant_time
    out: list[Any] = []

    def paused(*args: Any, **kwargs: Any) -> str:
        instant = real(*args, **kwargs)
        if not out:
            out.append(instant)
            try:
                out.append(step())
            except EvtError as exc:
                out.append(exc)
        return instant

    writer_module.new_instant_time = paused  # type: ignore[assignment]
    try:
        yield out
    finally:
        writer_module.new_instant_time = real


def _strategy(kind: str) -> CompactionStrategy:
    return UnBoundedCompactionStrategy() if kind == "full" else EventTimeBasedCompactionStrategy(threshold=BASE + 100)


def _table(root: Path, version: int, merge_mode: str) -> tuple[evt.HudiTable, list[tuple[str, pd.DataFrame]]]:
    """A base file, a log at or below T (compacted by the event-time plan), a log above T (its leftover)."""
    t = create(root / "t", merge_mode, buckets=1, table_version=version)
    history: list[tuple[str, pd.DataFrame]] = []
    for batch in (rows(range(6), 1, 10), None, rows(range(4), 2, 10), rows(range(4), 3, 900)):
        if batch is None:
            c = t.compaction.schedule(UnBoundedCompactionStrategy())
            assert c is not None
            t.compaction.run(c)
            continue
        t.write(batch)
        history.append(("upsert", batch))
    return t, history


@pytest.mark.parametrize(
    ("version", "merge_mode", "kind", "link_mode", "run"),
    [
        (9, "commit_time", "event", "copy", True),
        (8, "commit_time", "event", "symlink", True),
        (9, "event_time", "event", "copy", True),
        (9, "commit_time", "full", "copy", True),
        (9, "commit_time", "event", "copy", False),
    ],
)
def test_a_write_requested_before_a_compaction_and_completed_after_it_keeps_its_records(
    tmp_path: Path, version: int, merge_mode: str, kind: str, link_mode: str, run: bool
) -> None:
    """A write ``W`` takes its instant, then a compaction ``C > W`` is scheduled (its fence sees no pending write:
    ``W.deltacommit.requested`` does not exist yet) and, with ``run``, run; then ``W`` writes its logs and completes
    after ``C``. ``W``'s logs join slice ``C`` (completed after it) and, named ``W < C``, replay before ``C``'s
    links: the leftovers' older records won over ``W``'s (the same ordering value under event-time ordering: the
    later record wins a tie). ``W`` must either read as the latest write or be refused, the table reading as before;
    rolled back and written again, it is read."""
    t, history = _table(tmp_path, version, merge_mode)
    other = evt.HudiTable.open(t.path)
    before = _model(history, merge_mode)
    _check(t, before, "before the race")

    def compaction() -> str:
        c = other.refresh().compaction.schedule(_strategy(kind), link_mode=link_mode)
        assert c is not None
        if run:
            other.refresh().compaction.run(c.instant)
        return c.instant

    w = rows(range(3), 3 if merge_mode == "event_time" else 4, 50)  # a tie with the leftover's ordering value
    w["v"] = [7.0, 8.0, 9.0]
    with _between_instant_and_requested(compaction) as raced:
        try:
            instant = t.write(w)
        except WriteError as exc:
            instant = None
            refused = exc
    assert len(raced) == 2 and isinstance(raced[1], str), f"the compaction did not run in between: {raced}"
    w_instant, c_instant = raced
    assert w_instant < c_instant
    if instant is not None:
        history.append(("upsert", w))
        _check(t, _model(history, merge_mode), f"write {instant} completed after compaction {c_instant}")
    else:
        assert w_instant in str(refused), refused
        _check(t, before, f"write {w_instant} refused")
        t.rollback(w_instant)
        _check(t, before, f"write {w_instant} rolled back")
    if not run:
        try:
            t.refresh().compaction.run(c_instant)
        except PlanValidationError:  # fence 2: the documented way out is unschedule, then schedule again
            assert t.compaction.unschedule(c_instant, dry_run=False).refused_reason is None
            c = t.compaction.schedule(_strategy(kind), link_mode=link_mode)
            assert c is not None
            t.compaction.run(c.instant)
        _check(t, _model(history, merge_mode), "after the plan ran")
    if instant is None:
        t.write(w)
        history.append(("upsert", w))
    _check(t, _model(history, merge_mode), "after the write went in")
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    if c is not None:
        t.compaction.run(c.instant)
    _check(t, _model(history, merge_mode), "after a full compaction")


@pytest.mark.parametrize("pause", ["after_requested", "after_logs"])
def test_a_schedule_while_an_earlier_write_is_pending_is_refused_and_changes_nothing(
    tmp_path: Path, pause: str
) -> None:
    """``W1`` requested (or its logs written), ``W2`` requested after it and completed (in other file groups: two
    writes of one file group cannot both complete out of order, ``test_independent_1x.py``), then a schedule: refused
    (``PendingTableServiceError``, nothing written); ``W1`` completes after ``W2``; the schedule then goes through
    and changes no answer."""
    t, history = _table(tmp_path, 9, "commit_time")
    other = evt.HudiTable.open(t.path)
    w1 = rows([0, 2], 5, 50)
    w1["v"] = [1.5, 3.5]
    w2 = rows([1, 3], 6, 60)
    seen: list[Any] = []

    def in_between() -> None:
        other.refresh()
        w2_instant = other.write(w2)
        files = sorted(p.relative_to(t.path).as_posix() for p in Path(t.path).rglob("*") if p.is_file())
        try:
            other.refresh().compaction.schedule(_strategy("event"))
        except PendingTableServiceError as exc:
            seen.append(exc)
        after = sorted(p.relative_to(t.path).as_posix() for p in Path(t.path).rglob("*") if p.is_file())
        assert after == files, "a refused schedule changed the table"
        seen.append(w2_instant)

    real_executor = writer_module.local_executor

    def executor(spec: Any, tasks: Any) -> Any:
        if pause == "after_requested":
            in_between()
            return real_executor(spec, tasks)
        out = real_executor(spec, tasks)
        in_between()
        return out

    w1_instant = t.write(w1, executor=executor)
    assert isinstance(seen[0], PendingTableServiceError) and w1_instant in str(seen[0]), seen
    w2_instant = seen[1]
    assert w1_instant < w2_instant
    history += [("upsert", w1), ("upsert", w2)]
    _check(t, _model(history, "commit_time"), "W1 completed after W2")
    c = t.refresh().compaction.schedule(_strategy("event"))
    assert c is not None
    t.compaction.run(c.instant)
    _check(t, _model(history, "commit_time"), "after the compaction")


def test_the_race_on_a_stock_table_with_a_metadata_table(tmp_path: Path) -> None:
    """The same race on a copy of a stock v9 table with a metadata table, written through the SIMPLE index: the
    write either reads as the latest (event-time ordering, a tie with the leftover's ordering value) or is refused
    with the table as before; the metadata table lists exactly the committed files throughout, and hudi-rs, listing
    through it, answers as the model."""
    from tests.mdt.mdt_helpers import committed_files, copy_fixture, mdt_files

    path = copy_fixture("mor_v9_txns_simple_meta", tmp_path)
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.payload.event.time.field=txn_ts\n")
    simple = {"hoodie.index.type": "SIMPLE"}
    t = evt.HudiTable.open(path)
    snap = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    columns = [c for c in snap.column_names if not c.startswith("_hoodie_")]
    rows0 = sorted(snap.select(columns).to_pylist(), key=lambda r: r["txn_id"])
    apac = [r for r in rows0 if r["region"] == "apac"][:2]
    model = {r["txn_id"]: r["merchant_name"] for r in rows0}
    top = max(r["txn_ts"] for r in rows0)
    low = min(r["txn_ts"] for r in rows0)

    def batch(ts: int, value: str) -> pa.Table:
        out = [dict(r, txn_ts=ts, merchant_name=value) for r in apac]
        return pa.Table.from_pylist(out, schema=snap.select(columns).schema)

    def check(what: str) -> None:
        got = {r["txn_id"]: r["merchant_name"] for r in evt.HudiTable.open(path).read().to_pylist()}
        assert got == model, f"{what}: our snapshot"
        rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
        assert {r["txn_id"]: r["merchant_name"] for r in rs.to_pylist()} == model, f"{what}: hudi-rs"
        assert mdt_files(path) == committed_files(path), f"{what}: the metadata table's files partition"

    t.write(batch(low + 1, "at-or-below"), options=simple)
    t.write(batch(top + 10, "leftover"), options=simple)
    model.update({r["txn_id"]: "leftover" for r in apac})
    check("before the race")
    other = evt.HudiTable.open(path)

    def compaction() -> str:
        c = other.refresh().compaction.schedule(EventTimeBasedCompactionStrategy(threshold=low + 5))
        assert c is not None and c.links, "the plan leaves the later log as a link"
        other.refresh().compaction.run(c.instant)
        return c.instant

    with _between_instant_and_requested(compaction) as raced:
        try:
            instant = t.write(batch(top + 10, "raced"), options=simple)
        except WriteError:
            instant = None
    assert len(raced) == 2 and isinstance(raced[1], str), raced
    if instant is None:
        check("the racing write refused")
        t.rollback(raced[0])
        check("the racing write rolled back")
        t.write(batch(top + 10, "raced"), options=simple)
    model.update({r["txn_id"]: "raced" for r in apac})
    check("the write went in")


def test_time_travel_at_or_after_a_pending_write_is_refused_until_it_completes(tmp_path: Path) -> None:
    """``W1`` requested and its logs written, ``W2`` requested after it and completed. Time travel is by requested
    time: once ``W1`` completes, every ``as_of`` at or after ``W1`` holds its records. While it is pending, an answer
    as of ``W2`` would leave them out and change when ``W1`` completes, so Hudi refuses time travel at or after the
    first incomplete commit (``TimelineUtils.validateTimestampAsOf``): a ``ReadError`` naming ``W1``, for snapshot and
    read-optimized time travel alike. Before ``W1``, and after it completes at every requested and completion time,
    the answer is the model's (writes replayed in requested order up to ``as_of``), ours and hudi-rs's. (``W2`` writes
    other file groups: two writes of one file group cannot both complete out of order.)"""
    t, history = _table(tmp_path, 9, "commit_time")
    other = evt.HudiTable.open(t.path)
    w1 = rows([0, 2], 5, 50)
    w2 = rows([1, 3], 6, 60)
    seen: dict[str, Any] = {}
    requested = [i.time for i in t.refresh().timeline.completed_commits() if i.action == "deltacommit"]

    def executor(spec: Any, tasks: Any) -> Any:
        out = writer_module.local_executor(spec, tasks)
        seen["w2"] = other.refresh().write(w2)
        reader = evt.HudiTable.open(t.path)
        for at in (spec.instant, seen["w2"], reader.timeline.instant(seen["w2"]).completion_time):
            for query in ("snapshot", "read_optimized"):
                with pytest.raises(evt.ReadError, match=spec.instant):
                    reader.read(query, as_of=at)
        last = max(requested)
        assert _answer(reader.read(as_of=last)) == _model(history, "commit_time"), "as of the write before W1"
        return out

    w1_instant = t.write(w1, executor=executor)
    by_time = dict(zip(requested, history, strict=True))
    by_time |= {w1_instant: ("upsert", w1), seen["w2"]: ("upsert", w2)}
    t.refresh()
    times = sorted(
        {i.time for i in t.timeline.completed_commits()}
        | {i.completion_time for i in t.timeline.completed_commits() if i.completion_time}
    )
    for at in times:
        want = _model([h for r, h in sorted(by_time.items()) if r <= at], "commit_time")
        assert _answer(t.read(as_of=at)) == want, f"time travel to {at}"
        rs = pa.Table.from_batches(
            hudi.HudiTableBuilder.from_base_uri(t.path).build().read(hudi.HudiReadOptions().with_as_of_timestamp(at))
        )
        assert _answer(rs) == want, f"hudi-rs time travel to {at}"


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("pause", ["requested", "logs"])
def test_two_writes_creating_the_same_bucket_leave_one_file_group(tmp_path: Path, version: int, pause: str) -> None:
    """Two writes into a bucket that has no file group yet, overlapping: ``W1`` plans a new file group for it and
    pauses before its tasks (or after its logs); ``W2`` looks at the table, where the bucket has no committed file
    group, and completes. ``W2`` creating a file group of its own and ``W1`` completing too left two file groups for
    one bucket: a key both wrote is in the table twice (``W1``'s older version beside ``W2``'s). One file group must
    be left: ``W2`` joins the file group ``W1`` created when it sees it (versions 8 and 9: logs are named by their own
    deltacommit), or one of the two is refused, left inflight, to be rolled back and written again."""
    t = create(tmp_path / "t", "commit_time", buckets=1, table_version=version)
    t.write(rows([1], 1, 10))  # region r1 only: region r0 has no file group
    other = evt.HudiTable.open(t.path)
    w1, w2 = rows([0, 2], 2, 20), rows([0, 4], 3, 30)
    history: list[tuple[str, pd.DataFrame]] = [("upsert", rows([1], 1, 10))]
    seen: list[str | EvtError] = []

    def second() -> None:
        before = sorted(p.relative_to(t.path).as_posix() for p in Path(t.path).rglob("*") if p.is_file())
        try:
            seen.append(other.refresh().write(w2))
        except WriteError as exc:
            after = sorted(p.relative_to(t.path).as_posix() for p in Path(t.path).rglob("*") if p.is_file())
            assert after == before, f"a write refused before writing changed the table: {exc}"
            seen.append(exc)

    def executor(spec: Any, tasks: Any) -> Any:
        if pause == "requested":
            second()
        out = writer_module.local_executor(spec, tasks)
        if pause == "logs":
            second()
        return out

    try:
        w1_instant = t.write(w1, executor=executor)
    except WriteError as exc:
        w1_instant = None
        refused = exc
    if pause == "logs":
        # W2 saw W1's file group: on 1.x it joins it and completes, and W1, which a later write of its file group
        # completed before, is refused; on version 6 W2 makes its own and completes, and W1, looking after that, is
        # refused.
        assert isinstance(seen[0], str), seen
        assert w1_instant is None
    if w1_instant is not None:
        history.append(("upsert", w1))
    if isinstance(seen[0], str):
        history.append(("upsert", w2))
    if w1_instant is None:
        failed = str(refused).split()[1]
        _check(t, _model(history, "commit_time"), "the first write refused")
        t.rollback(failed)
        t.write(w1)
        history.append(("upsert", w1))
    if not isinstance(seen[0], str):
        t.write(w2)
        history.append(("upsert", w2))
    slices = evt.HudiTable.open(t.path).view.latest_file_slices()
    groups = {s.file_id for s in slices if s.partition_path == "region=r0"}
    assert len(groups) == 1, f"one bucket, {len(groups)} file groups: {sorted(groups)}"
    ours = evt.HudiTable.open(t.path).read(columns=["_hoodie_record_key"])["_hoodie_record_key"].to_pylist()
    assert len(ours) == len(set(ours)), f"a key twice: {sorted(ours)}"
    _check(t, _model(history, "commit_time"), "after both writes")


@pytest.mark.spark
@pytest.mark.parametrize("pause", ["instant", "logs"])
def test_the_race_through_spark_writes_and_a_compaction_run_on_spark(tmp_path: Path, spark: Any, pause: str) -> None:
    """A Spark DataFrame write (keyed and written by Spark tasks) paused after taking its instant, while an event-time
    compaction is scheduled and run on Spark: the write must not complete with its logs before the links (it sees
    the completed compaction right after its requested file and takes a new instant after it). Paused after its
    logs instead (requested before the schedule, which is then refused), it completes and the compaction, scheduled
    and run on Spark afterwards, changes no answer."""
    from evt_toolkit.spark.executor import write_dataframe

    t, history = _table(tmp_path, 9, "commit_time")
    other = evt.HudiTable.open(t.path)
    w = rows(range(3), 4, 50)
    w["v"] = [7.0, 8.0, 9.0]

    def compaction() -> str:
        c = other.refresh().compaction.schedule(_strategy("event"), link_mode="copy")
        assert c is not None
        other.refresh().compaction.run(c.instant, spark=spark)
        return c.instant

    if pause == "instant":
        # The compaction completed before the write's requested file existed: the write takes a new instant after
        # it (a reader may have answered as of the compaction). Only a plan still pending is fenced.
        with _between_instant_and_requested(compaction) as raced:
            instant = write_dataframe(t, spark.createDataFrame(w), "upsert")
        assert isinstance(raced[1], str) and raced[0] < raced[1] < instant, (raced, instant)
    else:
        refused: list[EvtError] = []
        real = writer_module.write

        def paused(table: Any, data: Any, *args: Any, executor: Any = None, **kwargs: Any) -> str:
            def run(spec: Any, tasks: Any) -> Any:
                out = executor(spec, tasks)
                try:
                    compaction()
                except PendingTableServiceError as exc:
                    refused.append(exc)
                return out

            return real(table, data, *args, executor=run, **kwargs)

        import evt_toolkit.spark.executor as spark_executor_module

        spark_executor_module.write = paused  # type: ignore[assignment]
        try:
            instant = write_dataframe(t, spark.createDataFrame(w), "upsert")
        finally:
            spark_executor_module.write = real
        assert refused and instant in str(refused[0]), refused
        compaction()
    history.append(("upsert", w))
    _check(t, _model(history, "commit_time"), "after the Spark write went in")
