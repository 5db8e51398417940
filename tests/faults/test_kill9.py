"""``kill -9`` at every fault point of write, schedule, run, clean and rollback, then the documented recovery.

Each test copies a small prepared table, runs one step in a child process with ``EVT_FAULT_AT=<point>`` (the child
dies with SIGKILL there: no clean-up runs), checks that the table still reads as before (or as after, for points
past the commit), applies the recovery from the README's "Crash safety" section in this process, and checks that
nothing is lost and nothing duplicated: our snapshot and hudi-rs's equal an independent oracle (multisets of rows),
our RO view equals hudi-rs's, compaction plans validate, and the next write or compaction succeeds.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.compaction.validate import validate_compaction
from evt_toolkit.faults import FAULT_POINTS
from evt_toolkit.table.timeline import CLEAN, COMPACTION, DELTA_COMMIT, ROLLBACK
from tests.faults import (
    assert_killed,
    check_readers,
    copy_table,
    data_files,
    oracle_of,
    orphan_files,
    run_child,
    save_batch,
)
from tests.tables import BASE, create, deletes, rows, same

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

T = BASE + 300
#: The history of the prepared table (event-time merging, two partitions × two buckets): late data, deletes with
#: ordering values, a late lower-ordered update, ``_hoodie_is_deleted``.
HISTORY: list[tuple[str, pd.DataFrame]] = [
    ("upsert", rows(range(0, 20), 10, 100)),
    ("upsert", rows(range(10, 30), 20, 150)),
    ("delete", deletes([1, 2, 7], 30)),
    ("upsert", rows(range(3, 12), 25, 200)),
    ("upsert", rows(range(25, 40), 40, 400)),
    ("upsert", rows([1, 2, 4], 5, 450)),
    ("upsert", rows([5, 6], 60, 500, deleted=[True, False])),
]
#: The batch the crashing writes write: updates in every file group and new keys.
BATCH = rows([0, 3, 8, 9, 21, 22, 38, 39, 50, 51, 52, 53], 70, 250)
AFTER_COMPACTION: list[tuple[str, pd.DataFrame]] = [
    ("upsert", rows(range(0, 10), 80, 600)),
    ("upsert", rows(range(5, 15), 90, 700)),
]


def _strategy() -> EventTimeBasedCompactionStrategy:
    return EventTimeBasedCompactionStrategy(threshold=T)


def _point(fault: str) -> str:
    assert fault.split("#", 1)[0] in FAULT_POINTS, fault
    return fault


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``history``: the history's table. ``cleanable-<mode>``: compacted with ``<mode>`` links, then two writes."""
    root = tmp_path_factory.mktemp("templates")
    t = create(root / "history", "event_time")
    for op, df in HISTORY:
        t.write(df, op)
    out = {"history": root / "history"}
    for mode in ("copy", "symlink"):
        path = copy_table(root / "history", root / f"cleanable-{mode}")
        c = evt.HudiTable.open(path)
        sc = schedule_compaction(c, _strategy(), link_mode=mode)
        assert sc is not None
        run_compaction(c, sc.instant)
        for op, df in AFTER_COMPACTION:
            c.write(df, op)
        out[f"cleanable-{mode}"] = path
    return out


def _pending(t: evt.HudiTable, action: str) -> list[str]:
    return [i.time for i in t.refresh().timeline.instants if i.action == action and not i.is_completed]


# -- write ---------------------------------------------------------------------------------------------------------


WRITE_CASES = [
    "write.after_requested",
    "write.after_inflight",
    "write.after_task",
    "write.after_task#3",
    "write.before_complete",
    "write.after_complete",
]


@pytest.mark.parametrize("fault", WRITE_CASES)
def test_write_killed(tmp_path: Path, templates: dict[str, Path], fault: str) -> None:
    path = copy_table(templates["history"], tmp_path / "t")
    files_before = data_files(path)
    proc = run_child(path, _point(fault), "write", str(save_batch(BATCH, tmp_path / "b.parquet")), "upsert")
    assert_killed(proc)
    t = evt.HudiTable.open(path)
    before, with_batch = oracle_of(HISTORY), oracle_of([*HISTORY, ("upsert", BATCH)])

    if fault == "write.after_complete":
        # The commit is durable; only the marker folder was left behind. Nothing to recover.
        check_readers(t, with_batch, "committed before the kill")
        expected = with_batch
    else:
        pending = _pending(t, DELTA_COMMIT)
        assert len(pending) == 1
        check_readers(t, before, "killed write is invisible")
        # Recovery: roll the failed instant back; every file it wrote goes, nothing else.
        res = t.rollback(pending[0])
        assert res.target == pending[0]
        assert data_files(path) == files_before
        assert not _pending(t, DELTA_COMMIT)
        check_readers(t, before, "after rollback")
        t.write(BATCH)
        expected = with_batch
    check_readers(t, expected, "after recovery and the write")
    # The table is fully usable: a compaction can be scheduled (no write is left inflight) and run.
    c = schedule_compaction(t, EventTimeBasedCompactionStrategy(threshold=BASE + 1000))
    assert c is not None
    run_compaction(t, c.instant)
    assert validate_compaction(t, c.instant).ok
    check_readers(t, expected, "compacted after recovery")


# -- schedule ------------------------------------------------------------------------------------------------------


SCHEDULE_CASES = [
    ("links.after_link", "copy", "schedule"),
    ("links.after_link#3", "symlink", "schedule"),
    ("schedule.after_links", "copy", "schedule"),
    ("schedule.before_plan", "symlink", "schedule"),
    ("schedule.before_plan", "copy", "execute"),
]


@pytest.mark.parametrize(("fault", "link_mode", "link_timing"), SCHEDULE_CASES)
def test_schedule_killed(
    tmp_path: Path, templates: dict[str, Path], fault: str, link_mode: str, link_timing: str
) -> None:
    path = copy_table(templates["history"], tmp_path / "t")
    proc = run_child(path, _point(fault), "schedule", str(T), link_mode, link_timing)
    assert_killed(proc)
    t = evt.HudiTable.open(path)
    expected = oracle_of(HISTORY)
    assert not [i for i in t.timeline.instants if i.action == COMPACTION], "no plan was written"
    check_readers(t, expected, "links without a plan are invisible")

    # Recovery: schedule again at the instant named by the orphan links; existing identical links are adopted.
    orphans = orphan_files(t)
    assert bool(orphans) == (link_timing == "schedule")
    assert len(orphans) <= 1
    instant = next(iter(orphans), None)
    c = schedule_compaction(t, _strategy(), link_mode=link_mode, link_timing=link_timing, instant=instant)
    assert c is not None and (instant is None or c.instant == instant)
    assert validate_compaction(t, c.instant).ok
    assert orphan_files(t) == {}
    check_readers(t, expected, "re-scheduled")
    run_compaction(t, c.instant)
    assert validate_compaction(t, c.instant).ok
    check_readers(t, expected, "compacted")
    t.write(BATCH)
    check_readers(t, oracle_of([*HISTORY, ("upsert", BATCH)]), "next write")


# -- run -------------------------------------------------------------------------------------------------------------


RUN_CASES = [
    ("run.after_inflight", "copy", "schedule"),
    ("links.after_link#2", "symlink", "execute"),
    ("run.after_links", "copy", "execute"),
    ("run.after_task", "copy", "schedule"),
    ("run.after_task#3", "symlink", "schedule"),
    ("run.before_commit", "copy", "schedule"),
]


@pytest.mark.parametrize("recovery", ["rerun", "rollback"])
@pytest.mark.parametrize(("fault", "link_mode", "link_timing"), RUN_CASES)
def test_run_killed(
    tmp_path: Path,
    templates: dict[str, Path],
    fault: str,
    link_mode: str,
    link_timing: str,
    recovery: str,
) -> None:
    path = copy_table(templates["history"], tmp_path / "t")
    t = evt.HudiTable.open(path)
    c = schedule_compaction(t, _strategy(), link_mode=link_mode, link_timing=link_timing)
    assert c is not None and c.operations >= 3
    # The same plan run without a fault, for comparison.
    ref = evt.HudiTable.open(copy_table(path, tmp_path / "ref"))
    run_compaction(ref, c.instant)

    proc = run_child(path, _point(fault), "run", c.instant)
    assert_killed(proc)
    expected = oracle_of(HISTORY)
    assert _pending(t, COMPACTION) == [c.instant]
    check_readers(t, expected, "killed run: the old slices still serve reads")

    if recovery == "rollback":
        rb = t.rollback(c.instant)
        assert rb.plan_requested_again
        assert [i.state.value for i in t.refresh().timeline.instants if i.time == c.instant] == ["REQUESTED"]
        assert not list(path.rglob(f"*_{c.instant}.parquet")), "the run's base files are gone"
        check_readers(t, expected, "rolled back")
    res = run_compaction(t, c.instant)
    assert res.operations == c.operations
    assert validate_compaction(t, c.instant).ok
    check_readers(t, expected, f"{recovery}: completed")
    same(t.read("read_optimized"), ref.read("read_optimized"), "RO equals an uninterrupted run's")
    ours = {p.relative_to(path): p.read_bytes() for p in path.rglob(f"*_{c.instant}.parquet")}
    theirs = {p.relative_to(ref.path): p.read_bytes() for p in Path(ref.path).rglob(f"*_{c.instant}.parquet")}
    assert ours == theirs, "the recovered run wrote the same base files, byte for byte"
    t.write(BATCH)
    check_readers(t, oracle_of([*HISTORY, ("upsert", BATCH)]), "next write")


# -- clean -----------------------------------------------------------------------------------------------------------


CLEAN_CASES = ["clean.after_requested", "clean.after_inflight", "clean.after_delete"]


@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
@pytest.mark.parametrize("fault", CLEAN_CASES)
def test_clean_killed(tmp_path: Path, templates: dict[str, Path], fault: str, link_mode: str) -> None:
    path = copy_table(templates[f"cleanable-{link_mode}"], tmp_path / "t")
    t = evt.HudiTable.open(path)
    policy, retained = "KEEP_LATEST_FILE_VERSIONS", 1
    planned = set(t.clean(policy, retained).files)
    assert planned
    expected = oracle_of([*HISTORY, *AFTER_COMPACTION])

    proc = run_child(path, _point(fault), "clean", policy, str(retained))
    assert_killed(proc)
    assert len(_pending(t, CLEAN)) == 1
    check_readers(t, expected, "killed clean")
    compaction = next(i.time for i in t.timeline.instants if i.action == "commit")
    # Symlinks need their targets, so the cleaner keeps them; copies stand alone and their targets may go.
    links_sound = link_mode == "copy" or validate_compaction(t, compaction).ok
    assert links_sound, "no link lost its target"

    # Recovery: clean again; the pending clean is finished from its own plan before anything new is planned.
    res = t.clean(policy, retained, dry_run=False)
    assert res.resumed and set(res.files) == planned
    if fault == "clean.after_delete":
        assert not res.deleted  # deleted before the kill; recorded as failed deletes, as Hudi does
    else:
        assert set(res.deleted) == planned
    assert not _pending(t, CLEAN)
    assert not planned & data_files(path)
    assert link_mode == "copy" or validate_compaction(t, compaction).ok
    check_readers(t, expected, "clean finished")
    assert not t.clean(policy, retained).files, "nothing left to clean"
    t.write(BATCH)
    check_readers(t, oracle_of([*HISTORY, *AFTER_COMPACTION, ("upsert", BATCH)]), "next write")


# -- rollback --------------------------------------------------------------------------------------------------------

ROLLBACK_POINTS = [
    "rollback.after_requested",
    "rollback.after_inflight",
    "rollback.after_uncommit",
    "rollback.after_delete",
    "rollback.after_blocks",
    "rollback.before_complete",
]


@pytest.mark.parametrize(
    ("target", "fault"),
    [
        *[("failed_write", f) for f in ROLLBACK_POINTS if f != "rollback.after_uncommit"],
        *[("last_write", f) for f in ROLLBACK_POINTS],
        *[("compaction", f) for f in ROLLBACK_POINTS if f != "rollback.after_uncommit"],
    ],
)
def test_rollback_killed(tmp_path: Path, templates: dict[str, Path], target: str, fault: str) -> None:
    path = copy_table(templates["history"], tmp_path / "t")
    t = evt.HudiTable.open(path)
    history = HISTORY
    files_before = data_files(path)
    if target == "failed_write":
        batch_file = str(save_batch(BATCH, tmp_path / "b.pq"))
        assert_killed(run_child(path, "write.before_complete", "write", batch_file, "upsert"))
        instant = _pending(t, DELTA_COMMIT)[0]
    elif target == "last_write":
        instant = t.write(BATCH)
        history = [*HISTORY, ("upsert", BATCH)]
    else:
        c = schedule_compaction(t, _strategy(), link_mode="symlink", link_timing="execute")
        assert c is not None
        assert_killed(run_child(path, "run.before_commit", "run", c.instant))
        instant = c.instant
    before_rollback = oracle_of(history)
    after_rollback = oracle_of(HISTORY)

    assert_killed(run_child(path, _point(fault), "rollback", instant))
    assert len(_pending(t, ROLLBACK)) == 1
    # A half-done rollback shows the table either as before or as after it, never in between.
    snap = t.refresh().read()
    try:
        same(snap, before_rollback, "half-done rollback")
    except AssertionError:
        same(snap, after_rollback, "half-done rollback")

    # Recovery: roll back again; the pending rollback is resumed from its plan.
    res = t.rollback(instant)
    assert res.resumed and res.target == instant
    assert not _pending(t, ROLLBACK)
    check_readers(t, after_rollback, "rollback finished")
    if target == "compaction":
        assert not list(path.rglob(f"*_{instant}.parquet"))
        run_compaction(t, instant)
        assert validate_compaction(t, instant).ok
        check_readers(t, after_rollback, "compaction re-run")
    else:
        assert data_files(path) == files_before
        assert not [i for i in t.timeline.instants if i.time == instant]
        t.write(BATCH)
        check_readers(t, oracle_of([*HISTORY, ("upsert", BATCH)]), "next write")


def test_every_fault_point_is_exercised() -> None:
    """Every documented fault point is killed at by a test above, and every point the tests name is documented."""
    cases = [*WRITE_CASES, *(f for f, _, _ in SCHEDULE_CASES), *(f for f, _, _ in RUN_CASES), *CLEAN_CASES]
    cases += ROLLBACK_POINTS
    assert {c.split("#", 1)[0] for c in cases} == set(FAULT_POINTS)


def test_fault_point_is_inert_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from evt_toolkit.faults import ENV_VAR, fault_point

    monkeypatch.delenv(ENV_VAR, raising=False)
    fault_point("write.after_requested")
    monkeypatch.setenv(ENV_VAR, "write.after_requested#3")
    fault_point("write.after_requested")  # first hit of three: no kill
    fault_point("write.before_complete")  # another point


def test_child_without_fault_completes(tmp_path: Path, templates: dict[str, Path]) -> None:
    path = copy_table(templates["history"], tmp_path / "t")
    proc = run_child(path, None, "write", str(save_batch(BATCH, tmp_path / "b.parquet")), "upsert")
    assert proc.returncode == 0 and "not reached" in proc.stdout, proc.stderr
    check_readers(evt.HudiTable.open(path), oracle_of([*HISTORY, ("upsert", BATCH)]), "no fault")
    assert pq.read_table(tmp_path / "b.parquet").num_rows == len(BATCH)
