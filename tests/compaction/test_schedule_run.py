"""Scheduling and running event-time partial compactions on tables we write, checked by two readers."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.executor import CompactionExecutionError, ProgressEvent, run_compaction
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.compaction.unschedule import unschedule_compaction
from evt_toolkit.compaction.validate import validate_compaction
from evt_toolkit.errors import (
    LogFormatError,
    MetadataDecodeError,
    PendingTableServiceError,
    PlanValidationError,
)
from evt_toolkit.storage.temporary import is_temporary_name
from tests.tables import (
    BASE,
    create,
    expected_ro,
    history,
    hudi_rs,
    remaining_logs_ok,
    rows,
    same,
    snapshot,
)

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

T = BASE + 300


def _strategy() -> EventTimeBasedCompactionStrategy:
    return EventTimeBasedCompactionStrategy(threshold=T)


def _built(tmp_path: Path, merge_mode: str) -> evt.HudiTable:
    t = create(tmp_path / "t", merge_mode)
    history(t)
    return t


@pytest.mark.parametrize("merge_mode", ["commit_time", "event_time"])
@pytest.mark.parametrize(
    ("link_mode", "link_timing"),
    [("copy", "schedule"), ("symlink", "schedule"), ("copy", "execute"), ("symlink", "execute")],
)
def test_run_keeps_snapshot_and_ro_is_base_plus_prefix(
    tmp_path: Path, merge_mode: str, link_mode: str, link_timing: str
) -> None:
    t = _built(tmp_path, merge_mode)
    before = snapshot(t)
    c = schedule_compaction(t, _strategy(), link_mode=link_mode, link_timing=link_timing)
    assert c is not None and c.operations > 0 and c.links
    assert validate_compaction(t, c.instant).ok
    # Pending window: both readers still see the same snapshot (links replay writes already seen).
    same(snapshot(t), before, "pending")
    want_ro = expected_ro(t, c.instant)
    events: list[ProgressEvent] = []
    res = run_compaction(t, c.instant, progress=events.append)
    assert res.operations == c.operations and res.links == len(c.links)
    assert events[0].stage == "links" and events[-1].stage == "commit"
    assert [e.done for e in events if e.stage == "tasks"] == list(range(1, c.operations + 1))
    same(snapshot(t), before, "ours after run")
    same(hudi_rs(t.path), before, "hudi-rs after run")
    ro = t.read("read_optimized")
    same(ro, want_ro, "RO = base ⊕ compacted prefix")
    same(hudi_rs(t.path, ro=True), ro, "hudi-rs RO")
    assert remaining_logs_ok(t, T, c.instant) == []
    assert validate_compaction(t, c.instant).ok
    if link_mode == "symlink":
        link = c.links[0]
        assert os.path.islink(t.storage.full_path(link.symlink_path))


def test_commit_and_base_file_look_like_hudi(tmp_path: Path) -> None:
    t = _built(tmp_path, "event_time")
    c = schedule_compaction(t, _strategy())
    assert c is not None
    run_compaction(t, c.instant)
    hoodie = Path(t.path) / ".hoodie"
    assert (hoodie / f"{c.instant}.compaction.requested").stat().st_size > 0
    assert (hoodie / f"{c.instant}.compaction.inflight").read_bytes() == b""
    meta = json.loads((hoodie / f"{c.instant}.commit").read_text())
    assert list(meta) == ["partitionToWriteStats", "compacted", "extraMetadata", "operationType"]
    assert meta["compacted"] is True and meta["operationType"] == "COMPACT"
    extra = meta["extraMetadata"]
    assert json.loads(extra["schema"])["type"] == "record"
    assert extra["evt.compaction.threshold.ms"] == str(T)
    assert extra["evt.compaction.link.mode"] == "copy" and extra["evt.compaction.link.timing"] == "schedule"
    links = json.loads(extra["evt.compaction.links"])
    assert {x["symlink"] for x in links} == {x.symlink for x in c.links}
    assert int(extra["evt.metrics.remaining.min_event_time"]) > T
    assert int(extra["evt.metrics.remaining.remaining_log_files"]) == len(c.links)
    stats = [s for ss in meta["partitionToWriteStats"].values() for s in ss]
    assert len(stats) == c.operations
    for s in stats:
        assert s["totalLogFilesCompacted"] >= 1 and s["totalLogSizeCompacted"] > 0 and s["totalLogRecords"] > 0
        assert s["prevCommit"] == "null"  # log-only groups get their first base file
        assert "logVersion" not in s
        name = s["path"].rsplit("/", 1)[-1]
        assert name == f"{s['fileId']}_{name.split('_')[1]}_{c.instant}.parquet"
        pf = pq.ParquetFile(Path(t.path) / s["path"])
        kv = pf.metadata.metadata
        assert kv[b"writer.model.name"] == b"avro"
        avro = json.loads(kv[b"parquet.avro.schema"])
        assert [f["name"] for f in avro["fields"]][:5] == [
            "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
            "_hoodie_file_name",
        ]  # fmt: skip
        tbl = pf.read()
        keys = tbl["_hoodie_record_key"].to_pylist()
        assert len(set(keys)) == len(keys), "one row per key"
        # Rows are in merge order (as Hudi's compactor writes them); the footer keys bound them all the same.
        assert kv[b"hoodie_min_record_key"].decode() == min(keys)
        assert kv[b"hoodie_max_record_key"].decode() == max(keys)
        assert set(tbl["_hoodie_file_name"].to_pylist()) == {name}
        # Meta fields preserved: commit times are the writers', not C.
        assert c.instant not in set(tbl["_hoodie_commit_time"].to_pylist())


def test_writes_between_schedule_and_run_land_after_links(tmp_path: Path) -> None:
    for link_timing in ("schedule", "execute"):
        t = create(tmp_path / link_timing, "commit_time")
        history(t)
        c = schedule_compaction(t, _strategy(), link_timing=link_timing)
        assert c is not None
        i = t.write(rows([1, 3, 38, 99], 70, 600))
        after_write = snapshot(t)
        assert pc.sum(pc.equal(after_write["id"], 99)).as_py() == 1
        # The new write went into slice C after every reserved link version.
        slices = t.file_slices().to_pylist()
        for s in slices:
            linked = [x.symlink for x in c.links if x.symlink.startswith(f".{s['file_id']}_")]
            new = [n for n in s["log_files"] if n not in linked and c.instant in n]
            if linked and new:
                top = max(int(x.split(".log.")[1].split("_")[0]) for x in linked)
                assert all(int(n.split(".log.")[1].split("_")[0]) > top for n in new)
        run_compaction(t, c.instant)
        same(snapshot(t), after_write, f"{link_timing}: after run")
        same(hudi_rs(t.path), after_write, f"{link_timing}: hudi-rs after run")
        assert i > c.instant


def test_exact_split_ro_holds_only_events_up_to_t(tmp_path: Path) -> None:
    for merge_mode in ("commit_time", "event_time"):
        t = create(tmp_path / merge_mode, merge_mode)
        t.write(rows(range(0, 20), 10, 100))
        t.write(rows(range(10, 30), 20, [100 + 50 * (i % 10) for i in range(10, 30)]))  # mixed ≤T / >T in one log
        t.write(rows(range(0, 5), 30, 250))
        t.write(rows(range(30, 40), 40, 700))
        before = snapshot(t)
        c = schedule_compaction(t, _strategy(), exact_split=True)
        assert c is not None and c.exact_split
        # No version is reserved any more: links start at 1, the carry-over log takes version 0.
        assert sorted({int(x.symlink.split(".log.")[1].split("_")[0]) for x in c.links})[:1] == [1]
        res = run_compaction(t, c.instant, exact_split=True)
        assert res.carried_over > 0
        carried = [n for n in t.file_slices().column("log_files").to_pylist() for n in n if ".log.0_" in n]
        assert carried and all(f"_{c.instant}.log.0_" in n for n in carried)
        ro = t.read("read_optimized")
        assert ro.num_rows > 0
        assert pc.max(ro["ev"]).as_py() <= T
        same(snapshot(t), before, f"{merge_mode}: snapshot unchanged by exact split")
        same(hudi_rs(t.path), before, f"{merge_mode}: hudi-rs snapshot")
        same(hudi_rs(t.path, ro=True), ro, f"{merge_mode}: hudi-rs RO")
        # Keys updated after T keep their previous (≤ T) base version in RO.
        ro_ids = set(ro["id"].to_pylist())
        assert {10, 11, 12, 13}.issubset(ro_ids)


def test_schedule_refusals_and_empty_plan(tmp_path: Path) -> None:
    t = _built(tmp_path, "commit_time")
    assert schedule_compaction(t, EventTimeBasedCompactionStrategy(threshold=BASE)) is None
    assert not any(n.endswith(".compaction.requested") for n in os.listdir(Path(t.path) / ".hoodie"))
    c = schedule_compaction(t, _strategy())
    assert c is not None
    with pytest.raises(PendingTableServiceError, match=c.instant):
        schedule_compaction(t, _strategy())


def test_links_are_idempotent_and_conflicts_named(tmp_path: Path) -> None:
    t = _built(tmp_path, "commit_time")
    before = snapshot(t)
    c = schedule_compaction(t, _strategy())
    assert c is not None
    # A crash after the links, before the plan: remove the plan and schedule again at the same instant.
    Path(t.storage.full_path(f".hoodie/{c.instant}.compaction.requested")).unlink()
    c2 = schedule_compaction(t, _strategy(), instant=c.instant)
    assert c2 is not None and c2.links == c.links
    same(snapshot(t), before, "after re-schedule")
    # A differing file under a link name that the schedule did not create (no record of it) is reported, never
    # replaced. (A recorded link of an abandoned schedule is removed before scheduling again.)
    Path(t.storage.full_path(f".hoodie/{c.instant}.compaction.requested")).unlink()
    shutil.rmtree(t.storage.full_path(f".hoodie/.temp/evt/{c.instant}"))
    link = Path(t.storage.full_path(c.links[0].symlink_path))
    link.write_bytes(b"other")
    with pytest.raises(PlanValidationError, match=c.links[0].symlink):
        schedule_compaction(t, _strategy(), instant=c.instant)


def test_unschedule_restores_the_table(tmp_path: Path) -> None:
    t = _built(tmp_path, "event_time")
    listing_before = sorted(p.relative_to(t.path).as_posix() for p in Path(t.path).rglob("*") if p.is_file())
    before = snapshot(t)
    c = schedule_compaction(t, _strategy(), link_mode="symlink")
    assert c is not None
    dry = unschedule_compaction(t, c.instant)
    assert not dry.deleted and dry.refused_reason is None
    assert {x.symlink_path for x in c.links} <= set(dry.files_to_delete)
    assert dry.files_to_delete[-1].endswith(".compaction.requested")
    done = unschedule_compaction(t, c.instant, dry_run=False)
    assert done.deleted
    listing_after = sorted(p.relative_to(t.path).as_posix() for p in Path(t.path).rglob("*") if p.is_file())
    assert listing_after == listing_before
    same(snapshot(t), before, "after unschedule")
    # Refused once a writer used the new slice.
    c = schedule_compaction(t, _strategy())
    assert c is not None
    t.write(rows([1, 2], 90, 900))
    refused = unschedule_compaction(t, c.instant, dry_run=False)
    assert not refused.deleted and refused.refused_reason and "writer" in refused.refused_reason


def test_bad_inputs_named(tmp_path: Path) -> None:
    # Corrupt log in an operation: specific error naming it, no C.commit.
    t = _built(tmp_path / "a", "commit_time")
    c = schedule_compaction(t, _strategy())
    assert c is not None
    op = c.plan.operations[0]
    victim = Path(t.storage.full_path(f"{op.partition_path}/{op.delta_files[0]}"))
    data = bytearray(victim.read_bytes())
    data[20:40] = b"\xff" * 20
    victim.write_bytes(bytes(data))
    with pytest.raises(LogFormatError, match=victim.name):
        run_compaction(t, c.instant)
    assert not (Path(t.path) / ".hoodie" / f"{c.instant}.commit").exists()

    # Missing log file: named.
    t = _built(tmp_path / "b", "commit_time")
    c = schedule_compaction(t, _strategy())
    assert c is not None
    op = c.plan.operations[0]
    gone = Path(t.storage.full_path(f"{op.partition_path}/{op.delta_files[-1]}"))
    gone.unlink()
    with pytest.raises(PlanValidationError, match=gone.name):
        run_compaction(t, c.instant)
    report = validate_compaction(t, c.instant)
    assert not report.ok and any(gone.name in p for p in report.problems)

    # Dangling symlink: validate names it.
    t = _built(tmp_path / "c", "commit_time")
    c = schedule_compaction(t, _strategy(), link_mode="symlink")
    assert c is not None
    Path(t.storage.full_path(c.links[0].target_path)).unlink()
    report = validate_compaction(t, c.instant)
    assert not report.ok and any(c.links[0].symlink in p for p in report.problems)

    # Plan file cut short: decode error naming the plan.
    t = _built(tmp_path / "d", "commit_time")
    c = schedule_compaction(t, _strategy())
    assert c is not None
    plan_path = Path(t.path) / ".hoodie" / f"{c.instant}.compaction.requested"
    plan_path.write_bytes(plan_path.read_bytes()[:-30])
    with pytest.raises(MetadataDecodeError, match=r"compaction\.requested"):
        run_compaction(t, c.instant)


def test_missing_base_file_named(tmp_path: Path) -> None:
    t = _built(tmp_path, "commit_time")
    c = schedule_compaction(t, _strategy())
    assert c is not None
    run_compaction(t, c.instant)
    t.write(rows(range(0, 10), 99, 200))
    c2 = schedule_compaction(t, EventTimeBasedCompactionStrategy(threshold=BASE + 1000))
    assert c2 is not None
    op = next(o for o in c2.plan.operations if o.data_file)
    base = Path(t.storage.full_path(f"{op.partition_path}/{op.data_file}"))
    base.unlink()
    with pytest.raises(PlanValidationError, match=base.name):
        run_compaction(t, c2.instant)


def test_failed_run_then_rerun_is_identical(tmp_path: Path) -> None:
    t = _built(tmp_path, "event_time")
    before = snapshot(t)
    c = schedule_compaction(t, _strategy())
    assert c is not None
    target = c.plan.operations[-1].file_id

    def boom(task: Any, stage: str) -> None:
        if stage == "written" and task.file_id == target:
            raise RuntimeError("injected failure")

    with pytest.raises(RuntimeError, match="injected"):
        run_compaction(t, c.instant, fault_hook=boom)
    same(snapshot(t), before, "after failed run")
    same(hudi_rs(t.path), before, "hudi-rs after failed run")
    run_compaction(t, c.instant)
    first = {p: p.read_bytes() for p in Path(t.path).rglob(f"*_{c.instant}.parquet")}
    same(snapshot(t), before, "after re-run")
    assert len(first) == c.operations


@pytest.mark.spark
def test_spark_run_equals_local_and_survives_task_failure(tmp_path: Path, spark: Any) -> None:
    local = _built(tmp_path / "local", "event_time")
    remote = create(tmp_path / "spark", "event_time")
    history(remote)
    c_local = schedule_compaction(local, _strategy())
    c_remote = schedule_compaction(remote, _strategy())
    assert c_local is not None and c_remote is not None
    before = snapshot(remote)
    target = c_remote.plan.operations[0].file_id

    def boom(task: Any, stage: str) -> None:
        if stage == "written" and task.file_id == target:
            raise RuntimeError("injected spark task failure")

    with pytest.raises(CompactionExecutionError):
        run_compaction(remote, c_remote.instant, spark=spark, fault_hook=boom)
    assert not (Path(remote.path) / ".hoodie" / f"{c_remote.instant}.commit").exists()
    same(snapshot(remote), before, "after failed spark run")
    res = run_compaction(remote, c_remote.instant, spark=spark)
    run_compaction(local, c_local.instant)
    assert res.operations == c_remote.operations
    same(snapshot(remote), before, "spark run")
    same(remote.read("read_optimized"), local.read("read_optimized"), "spark RO == local RO")
    same(hudi_rs(remote.path), before, "hudi-rs after spark run")


def test_tasks_side_by_side_equal_tasks_one_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Spark the tasks run side by side, one per CPU: the answers are those of one task at a time."""
    from evt_toolkit.compaction import executor

    one = _built(tmp_path / "one", "event_time")
    two = _built(tmp_path / "two", "event_time")
    before = snapshot(two)
    c_one = schedule_compaction(one, _strategy())
    c_two = schedule_compaction(two, _strategy())
    assert c_one is not None and c_two is not None and c_two.operations > 2
    threads: set[str] = set()
    events: list[ProgressEvent] = []

    def seen(task: Any, stage: str) -> None:
        import threading

        threads.add(threading.current_thread().name)

    monkeypatch.setattr(executor, "local_task_slots", lambda tasks: 1)
    run_compaction(one, c_one.instant, fault_hook=seen)
    assert threads == {"MainThread"}
    threads.clear()
    monkeypatch.setattr(executor, "local_task_slots", lambda tasks: min(2, tasks))
    res = run_compaction(two, c_two.instant, fault_hook=seen, progress=events.append)
    assert len(threads) == 2 and all(n.startswith("evt-compaction-task") for n in threads)
    done = [e for e in events if e.stage == "tasks"]
    assert [e.done for e in done] == list(range(1, c_two.operations + 1))
    assert res.operations == c_two.operations
    same(snapshot(two), before, "side by side")
    same(two.read("read_optimized"), one.read("read_optimized"), "RO side by side == one at a time")
    same(hudi_rs(two.path), before, "hudi-rs after a side-by-side run")
    assert validate_compaction(two, c_two.instant).ok


def test_interrupted_side_by_side_run_stops_its_tasks_and_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while tasks run side by side: tasks not started never start, a running one stops at its next part
    (it leaves no file behind), nothing is committed, and the run can be run again."""
    from evt_toolkit.compaction import executor

    t = _built(tmp_path, "event_time")
    before = snapshot(t)
    c = schedule_compaction(t, _strategy())
    assert c is not None and c.operations > 2
    monkeypatch.setattr(executor, "local_task_slots", lambda tasks: min(2, tasks))
    written: list[int] = []

    def hook(task: Any, stage: str) -> None:
        if stage == "merged" and task.index != 0:
            assert task.cancel is not None
            task.cancel.wait(30)  # every other task is still running when the run is interrupted
        elif stage == "written":
            written.append(task.index)

    def interrupt(event: ProgressEvent) -> None:
        if event.stage == "tasks":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_compaction(t, c.instant, fault_hook=hook, progress=interrupt)
    assert written == [0]
    left = [p for p in Path(t.path).rglob("*") if is_temporary_name(p.name)]
    assert not left, "a stopped task leaves no temporary file"
    assert not (Path(t.path) / ".hoodie" / f"{c.instant}.commit").exists()
    same(snapshot(t), before, "after the interrupted run")
    same(hudi_rs(t.path), before, "hudi-rs after the interrupted run")
    monkeypatch.setattr(executor, "local_task_slots", lambda tasks: min(2, tasks))
    run_compaction(t, c.instant)
    same(snapshot(t), before, "after running it again")
    assert validate_compaction(t, c.instant).ok
