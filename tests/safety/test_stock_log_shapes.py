"""Log-file shapes stock Hudi 0.x leaves on a version-6 table, against a model and hudi-rs (``logshapes.Shaper``).

Drives, on copies of a stock table: blocks of several deltacommits appended to one log file, a rollover to log
versions 2 and 3 with other write tokens, a failed append rolled back by a command block in the same file or in a
later log (its instant older than the active timeline once the timeline is archived), a torn append followed by
further blocks, delete blocks without ordering values, and late data in a later log. Checks:

* snapshot, hudi-rs, time travel to every commit and every incremental window equal the model;
* event-time compactions (copy links at schedule time, symlinks at run time) whose threshold puts the prefix
  boundary after a multi-instant log, before a log holding only the command block of a failed write in the prefix,
  or nowhere keep every answer, and an unschedule and two cleans afterwards too (time travel and incremental
  windows answer as before or are refused);
* on the stock event-time table (``DefaultHoodieRecordPayload``): appends of late updates, deletes with and without
  an ordering value, records arriving on them in a rolled-over log, a failed append rolled back by the toolkit and a
  log sharing its version with the command log: compaction at thresholds across the event times keeps the snapshot
  (ours and hudi-rs's), time travel, incremental windows and RO up to the reported freshness;
* a rolled-back write's blocks do not count in its log's event-time facts;
* a rollback of the latest write appends a command block to a log it shares, deletes only a log all its own, and
  never touches another instant's blocks;
* a stock writer's append into a log the plan compacts (before or while the run reads it) stops the run from
  committing until that write completes, and is then compacted, never lost; so does an append into a leftover log
  after the run copied it into the new slice;
* a log holding a corrupt block of no known write is refused when the compaction is *scheduled* (the preview says
  so first), naming the table and the file, with nothing written (the run refused it, after the plan had opened a
  new slice that stock writers write into: neither run nor unschedule could then finish); a torn block whose
  headers name a write that a later command block rolls back is dropped by every reader, as Hudi's scanner drops
  it, and is compacted away (it was refused for good).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.errors import LogFormatError, PendingTableServiceError, ReadError
from evt_toolkit.services.clean_planner import KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS
from tests.conftest import SKIP_NO_SHARED
from tests.normalize import assert_same_rows
from tests.safety.logshapes import COLUMNS, FIRST_LOG, PARTITION, Shaper, log_name

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

T0 = 1695046462179  # the event time (ts) of the fixture's one log record


def _rs(path: Path) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())


def _same(got: pa.Table, want: pa.Table, what: str) -> None:
    assert_same_rows(got.select(list(COLUMNS)), want.select(list(COLUMNS)), list(COLUMNS), what)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".hoodie" not in p.parts
    }


def _build(tmp_path: Path, shape: str) -> tuple[Shaper, dict[str, pa.Table]]:
    """The shapes, one file group: ``shared`` (a failed append and its command block in log 1), ``torn`` (the same
    with a torn block before the command block), ``torn_headless`` (the torn block cut before its headers, so that
    nothing tells which write it belongs to) and ``archived`` (the command block in log 2 and the commits before
    the failed one archived, so that its instant predates the active timeline)."""
    s = Shaper.copy(tmp_path)
    keys = s.sf_keys()
    history: dict[str, pa.Table] = {}

    def commit(instant: str, name: str, *blocks: bytes, up: dict | None = None, dl: list | None = None) -> None:
        s.requested(instant)
        off, size = s.append(name, *blocks)
        s.complete(instant, [(name, off, size, len(up or {}), len(dl or []))], up, dl)
        history[instant] = s.model()

    up = s.updates(keys[:2], fare=2.0, ts=T0 - 100)
    commit("20250401000000000", FIRST_LOG, s.data_block("20250401000000000", up), up=up)
    failed, rb = "20250402000000000", "20250402000000100"
    s.requested(failed)
    s.append(FIRST_LOG, s.data_block(failed, s.updates(keys, fare=999.0, ts=1)))
    if shape in ("torn", "torn_headless"):
        torn = s.data_block(failed, s.updates(keys, fare=998.0, ts=1))
        s.append(FIRST_LOG, torn[: len(torn) // 2 if shape == "torn" else 20])
    s.forget(failed)
    s.append(log_name(2, "1-0-1") if shape == "archived" else FIRST_LOG, s.rollback_block(rb, failed))
    s.rollback_instant(rb, failed)
    later = log_name(3, "0-40-100") if shape == "archived" else log_name(2, "0-40-100")
    up, dl = s.updates(keys[2:3], fare=3.0, ts=T0 + 10**9), [keys[0]]
    first = later if shape == "archived" else FIRST_LOG
    commit(
        "20250403000000000",
        first,
        s.data_block("20250403000000000", up),
        s.delete_block("20250403000000000", dl, None),
        up=up,
        dl=dl,
    )
    up = s.updates(keys[3:4], fare=4.0, ts=T0 - 50)  # late data, rolled over into the next log
    commit("20250404000000000", later, s.data_block("20250404000000000", up), up=up)
    up = s.updates(keys[3:4], fare=5.0, ts=T0 + 2 * 10**9)  # keys[1] keeps its value of log 1
    commit("20250405000000000", later, s.data_block("20250405000000000", up), up=up)
    up = s.updates(keys[3:4], fare=6.0, ts=T0 + 3 * 10**9)
    commit("20250406000000000", log_name(4, "0-41-101"), s.data_block("20250406000000000", up), up=up)
    if shape == "archived":
        s.archive("20250331030642808", "20250331030645735", "20250401000000000")
        history.pop("20250401000000000")
    return s, history


def _answers(t: evt.HudiTable) -> dict[tuple[str, str], pa.Table]:
    commits = [i.time for i in t.refresh().timeline.completed_commits()]
    return {
        (b, e): t.read("incremental", begin=b, end=e) for b, e in zip(["0" * 17, *commits[:-1]], commits, strict=True)
    }


def _check(t: evt.HudiTable, s: Shaper, history: dict[str, pa.Table], windows: dict, what: str) -> None:
    _same(t.refresh().read(), s.model(), f"{what}: snapshot")
    _same(_rs(s.root), s.model(), f"{what}: hudi-rs snapshot")
    for instant, rows in history.items():
        _same(t.read(as_of=instant), rows, f"{what}: time travel to {instant}")
    for (b, e), rows in windows.items():
        _same(t.read("incremental", begin=b, end=e), rows, f"{what}: incremental ({b}, {e}]")


def _after_clean(t: evt.HudiTable, history: dict[str, pa.Table], windows: dict, what: str) -> None:
    """Time travel and incremental windows after a clean: the same answer, or refused — never a partial one."""
    for instant, rows in history.items():
        try:
            got = t.read(as_of=instant)
        except ReadError:
            continue
        _same(got, rows, f"{what}: time travel to {instant}")
    for (b, e), rows in windows.items():
        try:
            got = t.read("incremental", begin=b, end=e)
        except ReadError:
            continue
        _same(got, rows, f"{what}: incremental ({b}, {e}]")


@SKIP_NO_SHARED
@pytest.mark.parametrize("shape", ["shared", "archived"])
@pytest.mark.parametrize("threshold", [T0 - 200, T0 - 100, T0, T0 + 10**9])
@pytest.mark.parametrize(("link_mode", "link_timing"), [("copy", "schedule"), ("symlink", "execute")])
def test_event_time_compaction_of_shared_stock_logs_keeps_every_answer(
    tmp_path: Path, shape: str, threshold: int, link_mode: str, link_timing: str
) -> None:
    s, history = _build(tmp_path, shape)
    t = evt.HudiTable.open(s.root)
    windows = _answers(t)
    _check(t, s, history, windows, shape)
    strategy = EventTimeBasedCompactionStrategy(threshold=threshold, event_time_field="ts")
    before = _files(s.root)
    c = t.compaction.schedule(strategy, link_mode=link_mode, link_timing=link_timing)
    if c is None:
        assert _files(s.root) == before
        return
    _check(t, s, history, windows, f"{shape}: {c.instant} pending")
    rep = t.compaction.unschedule(c, dry_run=False)
    assert rep.deleted, rep.refused_reason
    assert _files(s.root) == before, "unschedule left or took a file"
    c = t.compaction.schedule(strategy, link_mode=link_mode, link_timing=link_timing)
    assert c is not None
    t.compaction.run(c)
    assert t.compaction.validate(c).ok
    _check(t, s, history, windows, f"{shape}: compacted at {threshold}")
    for policy in (KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS):
        t.clean(policy, 1, dry_run=False)
        _same(t.refresh().read(), s.model(), f"{shape}: snapshot after a {policy} clean")
        _same(_rs(s.root), s.model(), f"{shape}: hudi-rs after a {policy} clean")
        _after_clean(t, history, windows, f"{shape}: after a {policy} clean")
    assert t.compaction.validate(c).ok


@SKIP_NO_SHARED
@pytest.mark.parametrize("mode", ["appended", "rolled_over", "own_log", "failed_appended", "failed_own_log"])
def test_rollback_of_the_latest_write_on_shared_stock_logs(tmp_path: Path, mode: str) -> None:
    s = Shaper.copy(tmp_path)
    keys = s.sf_keys()
    first = "20250401000000000"
    up = s.updates(keys[:2], fare=2.0, ts=T0 - 100)
    s.requested(first)
    off, size = s.append(FIRST_LOG, s.data_block(first, up))
    s.complete(first, [(FIRST_LOG, off, size, 2, 0)], up)
    want = s.model()
    target = "20250402000000000"
    up = s.updates(keys[1:3], fare=3.0, ts=T0 + 5)
    own = log_name(2, "0-50-200")
    s.requested(target)
    if mode in ("appended", "failed_appended"):
        off, size = s.append(FIRST_LOG, s.data_block(target, up), s.delete_block(target, [keys[0]], None))
        writes = [(FIRST_LOG, off, size, 2, 1)]
    elif mode == "rolled_over":  # one block appended to log 1, the rest after a rollover at the size limit
        items = sorted(up.items())
        o1, s1 = s.append(FIRST_LOG, s.data_block(target, dict(items[:1])))
        o2, s2 = s.append(own, s.data_block(target, dict(items[1:])))
        writes = [(FIRST_LOG, o1, s1, 1, 0), (own, o2, s2, 1, 0)]
    else:
        off, size = s.append(own, s.data_block(target, up))
        writes = [(own, off, size, 2, 0)]
    if not mode.startswith("failed"):
        s.complete(target, writes, up)
    t = evt.HudiTable.open(s.root)
    before = _files(s.root)
    result = t.rollback(target)
    after = _files(s.root)
    _same(t.refresh().read(), want, f"{mode}: snapshot after the rollback")
    _same(_rs(s.root), want, f"{mode}: hudi-rs after the rollback")
    for name, data in before.items():
        if name in after:
            assert after[name] == data, f"{mode}: the rollback changed {name}"
        else:
            assert name == f"{PARTITION}/{own}" and not mode.startswith("failed"), (
                f"{mode}: the rollback deleted {name}"
            )
    for name in set(after) - set(before):
        assert name in result.command_block_logs, f"{mode}: {name} is not a command-block log"
    if mode in ("appended", "failed_appended", "rolled_over"):
        assert result.command_block_logs, f"{mode}: a shared log needs a command block"


@SKIP_NO_SHARED
def test_a_torn_block_of_no_known_write_is_refused_when_the_compaction_is_scheduled(tmp_path: Path) -> None:
    s, history = _build(tmp_path, "torn_headless")
    t = evt.HudiTable.open(s.root)
    windows = _answers(t)
    _check(t, s, history, windows, "torn")
    before = _files(s.root)
    timeline = sorted(p.name for p in (s.root / ".hoodie").iterdir())
    strategy = EventTimeBasedCompactionStrategy(threshold=T0, event_time_field="ts")
    summary = t.compaction.preview(strategy).summary
    assert summary.logs_corrupt_compacted == 1, "the preview shows a plan the schedule refuses"
    assert "corrupt" in summary.text()
    with pytest.raises(LogFormatError, match=r"corrupt block.*") as err:
        t.compaction.schedule(strategy)
    assert FIRST_LOG in str(err.value) and str(s.root) in str(err.value)
    assert _files(s.root) == before, "a refused schedule wrote"
    assert sorted(p.name for p in (s.root / ".hoodie").iterdir()) == timeline, "a refused schedule left a plan"
    _check(t, s, history, windows, "torn, refused")


@SKIP_NO_SHARED
@pytest.mark.parametrize("threshold", [T0, T0 + 10**9])
def test_a_torn_block_of_a_rolled_back_write_is_compacted_away(tmp_path: Path, threshold: int) -> None:
    """The torn block's headers name the failed write, which the command block after it rolls back: Hudi's scanner
    drops it (``ROLLBACK_BLOCK`` removes queued corrupt blocks), so a compaction merges what every reader reads."""
    s, history = _build(tmp_path, "torn")
    t = evt.HudiTable.open(s.root)
    windows = _answers(t)
    _check(t, s, history, windows, "torn")
    strategy = EventTimeBasedCompactionStrategy(threshold=threshold, event_time_field="ts")
    assert t.compaction.preview(strategy).summary.logs_corrupt_compacted == 0
    c = t.compaction.schedule(strategy)
    assert c is not None
    t.compaction.run(c)
    assert t.compaction.validate(c).ok
    _check(t, s, history, windows, f"torn: compacted at {threshold}")


@SKIP_NO_SHARED
def test_a_rolled_back_write_does_not_count_in_a_logs_event_times(tmp_path: Path) -> None:
    """Archived past its instant, a failed write's blocks look committed; the command block in log 2 still removes
    them, so log 1's min event time is that of its committed writes and a threshold below it plans nothing."""
    from evt_toolkit.compaction.event_times import slice_infos

    s, _ = _build(tmp_path, "archived")
    t = evt.HudiTable.open(s.root)
    logs = {lf.name: lf for sl in slice_infos(t, "ts") for lf in sl.log_files}
    assert logs[FIRST_LOG].min_event_time == T0 - 100, "the rolled-back write's event times counted"
    assert logs[FIRST_LOG].uncommitted_blocks == 1
    assert t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=T0 - 200, event_time_field="ts")) is None


EVENT_TIME_TABLE = {
    "fixture": "mor_table_uncommitted_log_v6",
    "partition": "",
    "file_id": "a32d33be-9a1c-493a-9880-23eb95bc0abf-0",
    "base_instant": "20260815174505835",
    "first_log": ".a32d33be-9a1c-493a-9880-23eb95bc0abf-0_20260815174505835.log.2_0-8-11",
    "template": "20260815174512044",
    "key_field": "uuid",
    "columns": ("ts", "uuid", "rider", "fare"),
}


def _event_time_shapes(tmp_path: Path) -> Shaper:
    """The event-time (``DefaultHoodieRecordPayload``) stock table: its failed write rolled back first (a command
    block in a new log), then appends into the committed log 2 — a late update, deletes with and without an ordering
    value — a rollover to log 4 with records arriving on those deletes, a failed append into log 4 rolled back, and a
    log 5 whose version the rollback's command log already has (another write token)."""
    s = Shaper.copy(tmp_path, **EVENT_TIME_TABLE)
    evt.HudiTable.open(s.root).rollback("20260815174509450")

    def up(key: str, ts: int, fare: float) -> dict[str, dict]:
        return {key: {**s.rows[key], "ts": ts, "fare": fare}}

    def commit(instant: str, name: str, *blocks: bytes, n: int = 1, d: int = 0) -> None:
        s.requested(instant)
        off, size = s.append(name, *blocks)
        s.complete(instant, [(name, off, size, n, d)])

    w1, w2, w3, w4, w5, failed = (f"202609010000000{i}0" for i in range(6))
    commit(w1, s.first_log, s.data_block(w1, {**up("a", 150, 1.0), **up("b", 300, 2.0)}), n=2)
    commit(w2, s.first_log, s.delete_block(w2, ["c"], [50]), s.delete_block(w2, ["d"], None), n=0, d=2)
    log4 = s.log(4, "0-9-12")
    commit(w3, log4, s.data_block(w3, up("d", 10, 3.0)))
    commit(w4, log4, s.data_block(w4, {**up("b", 250, 4.0), **up("c", 60, 5.0)}), n=2)
    s.requested(failed)
    s.append(log4, s.data_block(failed, up("a", 999, 9.0)))
    evt.HudiTable.open(s.root).rollback(failed)
    commit(w5, s.log(5, "0-9-13"), s.data_block(w5, up("a", 500, 6.0)), s.delete_block(w5, ["b"], [280]), n=1, d=1)
    return s


@SKIP_NO_SHARED
@pytest.mark.parametrize("threshold", [5, 55, 150, 400, 1000])
def test_event_time_ordering_on_shared_stock_logs_keeps_every_answer(tmp_path: Path, threshold: int) -> None:
    s = _event_time_shapes(tmp_path)
    t = evt.HudiTable.open(s.root)
    cols = list(EVENT_TIME_TABLE["columns"])
    snap = t.read()
    assert_same_rows(_rs(s.root).select(cols), snap.select(cols), cols, "hudi-rs, before")
    commits = [i.time for i in t.timeline.completed_commits()]
    as_of = {c: t.read(as_of=c) for c in commits}
    windows = _answers(t)
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=threshold, event_time_field="ts"))
    if c is None:
        return
    t.compaction.run(c)
    t.refresh()
    assert_same_rows(t.read().select(cols), snap.select(cols), cols, f"snapshot after compacting at {threshold}")
    assert_same_rows(_rs(s.root).select(cols), snap.select(cols), cols, f"hudi-rs after compacting at {threshold}")
    for instant, rows in as_of.items():
        assert_same_rows(t.read(as_of=instant).select(cols), rows.select(cols), cols, f"time travel to {instant}")
    for (b, e), rows in windows.items():
        got = t.read("incremental", begin=b, end=e)
        assert_same_rows(got.select(cols), rows.select(cols), cols, f"incremental ({b}, {e}]")
    fresh = t.ro_freshness().threshold_ms
    if fresh is not None:
        keep = pc.field("ts") <= fresh
        ro = t.read("read_optimized")
        assert_same_rows(ro.filter(keep).select(cols), snap.filter(keep).select(cols), cols, f"RO up to {fresh}")


@SKIP_NO_SHARED
@pytest.mark.parametrize("when", ["before_the_run", "while_it_runs"])
def test_a_stock_append_into_a_compacted_log_is_never_lost(tmp_path: Path, when: str) -> None:
    """A stock writer that chose its slice before the plan existed appends to a log the plan compacts (storage with
    append). While that write is pending the run must not commit: compacted without its block (not yet visible), the
    log's slice is superseded and the write's records vanish the moment it completes."""
    s, _ = _build(tmp_path, "shared")
    t = evt.HudiTable.open(s.root)
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=T0 - 50, event_time_field="ts"))
    assert c is not None and FIRST_LOG in c.plan.operations[0].delta_files
    keys = s.sf_keys()
    late = "20250407000000000"
    up = s.updates(keys[1:2], fare=77.0, ts=T0 + 5 * 10**9)
    s.requested(late)
    written: list[tuple[int, int]] = []

    def append() -> None:
        written.append(s.append(FIRST_LOG, s.data_block(late, up)))

    def hook(task: object, stage: str) -> None:
        if stage == "written" and not written:
            append()

    if when == "before_the_run":
        append()
    with pytest.raises(PendingTableServiceError, match=late) as err:
        t.compaction.run(c, fault_hook=hook)
    assert FIRST_LOG in str(err.value)
    assert not (s.root / ".hoodie" / f"{c.instant}.commit").exists(), "the run committed"
    [(off, size)] = written
    s.complete(late, [(FIRST_LOG, off, size, 1, 0)], up)
    _same(t.refresh().read(), s.model(), f"{when}: the append's write completed")
    _same(_rs(s.root), s.model(), f"{when}: hudi-rs, the append's write completed")
    t.compaction.run(c)
    assert t.compaction.validate(c).ok
    _same(t.refresh().read(), s.model(), f"{when}: compacted once the write completed")
    _same(_rs(s.root), s.model(), f"{when}: hudi-rs, compacted once the write completed")


@SKIP_NO_SHARED
def test_a_stock_append_into_a_log_copied_by_the_run_is_never_lost(tmp_path: Path) -> None:
    """A leftover log is copied into the new slice when the run starts (copy links at execute time); a stock writer
    appending to the original afterwards must stop the commit, or its block would be in neither slice."""
    s, _ = _build(tmp_path, "shared")
    t = evt.HudiTable.open(s.root)
    strategy = EventTimeBasedCompactionStrategy(threshold=T0 - 50, event_time_field="ts")
    c = t.compaction.schedule(strategy, link_mode="copy", link_timing="execute")
    assert c is not None and c.plan.operations[0].links
    leftover = c.plan.operations[0].links[0].target
    late = "20250407000000000"
    up = s.updates(s.sf_keys()[1:2], fare=77.0, ts=T0 + 5 * 10**9)
    s.requested(late)
    written: list[tuple[int, int]] = []

    def hook(task: object, stage: str) -> None:
        if stage == "written" and not written:
            written.append(s.append(leftover, s.data_block(late, up)))

    with pytest.raises(PendingTableServiceError, match=late) as err:
        t.compaction.run(c, fault_hook=hook)
    assert leftover in str(err.value)
    assert not (s.root / ".hoodie" / f"{c.instant}.commit").exists(), "the run committed"
    [(off, size)] = written
    s.complete(late, [(leftover, off, size, 1, 0)], up)
    _same(t.refresh().read(), s.model(), "the append's write completed")
    t.rollback(c.instant)  # the run's copies go with it; the plan is requested again
    t.compaction.run(c)
    assert t.compaction.validate(c).ok
    _same(t.refresh().read(), s.model(), "compacted once the write completed")
    _same(_rs(s.root), s.model(), "hudi-rs, compacted once the write completed")
