"""A compaction task attempt that runs on after its compaction was decided must not overwrite what was decided.

A compaction's outputs carry names that depend only on the plan (its base files ``{fileId}_{token}_{C}.parquet`` and
carry-over logs ``.{fileId}_{C}.log.0_{index}-0-0``), so an attempt of a task that Spark has not stopped yet (a
speculative copy, or a retry that lost the race) writes over the files the commit lists. Its decisions depend on
the logs of the new slice (docs/data-safety.md §2, commit-time deletes): once writes landed there after the commit,
the late attempt takes another form for a key — base row kept, the compacted winner moved to the carry-over log —
and the committed answer goes back to an older version of the record.

Each case builds a real table (versions 6 and 9, bucket index), compacts it, keeps the task of the run, then lets
writes land in the new slice (a commit-time delete and a lower-ordered update of a compacted key) and runs the kept
task again as the late attempt would. Checked against the answer before it (ours and hudi-rs): the snapshot must not
change, the data files must be byte for byte the same; the late attempt is refused with an ``EvtError`` naming the
instant (locally and, for the committed case, on the session's S3 server). The same holds for an attempt of a run
that was rolled back (the plan requested again) or unscheduled: it writes no file. And a run whose plan an unschedule
took back while its tasks ran commits nothing.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction.merge_task import MergeTask, run_merge_task
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import EvtError
from tests.s3.conftest import hudi_rs_s3
from tests.tables import create, hudi_rs, rows, same


def _data_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".hoodie" not in p.parts and not p.name.startswith(".hoodie_partition")
    }


def _commit_time_delete(ids: list[int]) -> pd.DataFrame:
    """Deletes without an ordering value (commit-time deletes, as Spark SQL ``DELETE``)."""
    return pd.DataFrame({"id": pd.array(ids, dtype="int64"), "region": [f"r{i % 2}" for i in ids]})


def _compacted(tmp_path: Path, version: int) -> tuple[Any, str, list[MergeTask]]:
    """A table whose keys 1 and 3 have a base row (ts 10) and a compacted update (ts 20); the run's tasks."""
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=version)
    t.write(rows([1, 3], 10, 100))
    c0 = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c0 is not None
    t.compaction.run(c0.instant)
    t.write(rows([1, 3], 20, 200))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    return t, c.instant, []


def _late(task: MergeTask) -> str:
    """Run ``task`` as a late attempt would (no local hook or cancel event: as Spark ships it)."""
    try:
        run_merge_task(dataclasses.replace(task, fault_hook=None, cancel=None))
    except EvtError as exc:
        return f"refused: {exc}"
    return "rewrote its outputs"


@pytest.mark.parametrize("version", [6, 9])
def test_a_late_compaction_attempt_after_writes_landed_in_the_new_slice_changes_nothing(
    tmp_path: Path, version: int
) -> None:
    t, c, tasks = _compacted(tmp_path, version)
    t.compaction.run(c, fault_hook=lambda task, at: tasks.append(task) if at == "merged" else None)
    assert len(tasks) == 1
    # Writes land in the new slice after the commit: a commit-time delete, then a lower-ordered update.
    t.write(_commit_time_delete([1]), "delete")
    t.write(rows([1], 5, 300))
    want = t.refresh().read()
    assert sorted(want.column("ts").to_pylist()) == [20, 20], "the compacted update wins over the late one"
    same(hudi_rs(t.path), want, "hudi-rs before the late attempt")
    before = _data_files(Path(t.path))

    outcome = _late(tasks[0])

    changed = sorted(p for p, b in _data_files(Path(t.path)).items() if before.get(p) != b)
    assert changed == [], f"a late compaction attempt ({outcome}) changed or added data files: {changed}"
    same(t.refresh().read(), want, f"snapshot after a late compaction attempt ({outcome})")
    same(hudi_rs(t.path), want, f"hudi-rs snapshot after a late compaction attempt ({outcome})")
    assert outcome.startswith("refused") and c in outcome, outcome


class _Died(Exception):
    """The run's own attempt of the task dies (the late attempt is another one, kept running)."""


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("then", ["rolled back", "unscheduled"])
def test_a_late_attempt_of_a_rolled_back_compaction_run_writes_nothing(tmp_path: Path, version: int, then: str) -> None:
    t, c, tasks = _compacted(tmp_path, version)

    def die(task: MergeTask, at: str) -> None:
        if at == "merged":
            tasks.append(task)
            raise _Died("the run's attempt dies")

    with pytest.raises(_Died):
        t.compaction.run(c, fault_hook=die)
    assert len(tasks) == 1
    t.refresh().rollback(c)
    if then == "unscheduled":
        t.refresh().compaction.unschedule(c)
    want = t.refresh().read()
    before = _data_files(Path(t.path))

    outcome = _late(tasks[0])

    added = sorted(set(_data_files(Path(t.path))) - set(before))
    assert added == [], f"a late attempt of a {then} compaction run ({outcome}) left files: {added}"
    same(t.refresh().read(), want, f"snapshot after the late attempt ({outcome})")
    same(hudi_rs(t.path), want, f"hudi-rs snapshot after the late attempt ({outcome})")
    assert outcome.startswith("refused") and c in outcome, outcome


@pytest.mark.parametrize("version", [6, 9])
def test_a_run_whose_plan_was_unscheduled_while_its_tasks_ran_commits_nothing(tmp_path: Path, version: int) -> None:
    """An unschedule cannot tell a running run from a crashed one: taken back while the tasks ran (their outputs and
    the plan's links deleted), the plan must not be completed by the run afterwards."""
    t, c, _ = _compacted(tmp_path, version)
    want = t.read()
    other = evt.HudiTable.open(t.path)
    reports: list[Any] = []

    def unschedule(task: MergeTask, at: str) -> None:
        if at == "written" and not reports:
            reports.append(other.refresh().compaction.unschedule(c, dry_run=False))

    with pytest.raises(EvtError, match=c):
        t.compaction.run(c, fault_hook=unschedule)
    assert reports and reports[0].deleted, reports
    assert [i for i in t.refresh().timeline.instants if i.time == c] == [], "a commit of the unscheduled plan"
    assert [p for p in _data_files(Path(t.path)) if c in p] == [], "files named with the unscheduled plan"
    same(t.read(), want, "snapshot after the run of an unscheduled plan")
    same(hudi_rs(t.path), want, "hudi-rs snapshot after the run of an unscheduled plan")


@pytest.mark.parametrize("version", [6, 9])
def test_a_late_compaction_attempt_changes_nothing_on_s3(s3_server: Any, version: int) -> None:
    uri = f"s3://{s3_server.new_bucket('latecompaction')}/t"
    t = create(uri, "event_time", buckets=1, table_version=version, storage_options=s3_server.options)
    t.write(rows([1, 3], 10, 100))
    c0 = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c0 is not None
    t.compaction.run(c0.instant)
    t.write(rows([1, 3], 20, 200))
    plan = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert plan is not None
    tasks: list[MergeTask] = []
    t.compaction.run(plan.instant, fault_hook=lambda task, at: tasks.append(task) if at == "merged" else None)
    t.write(_commit_time_delete([1]), "delete")
    t.write(rows([1], 5, 300))
    want = t.refresh().read()

    def files() -> dict[str, bytes]:
        return {
            f.path: t.storage.read_bytes(f.path) for p in ("region=r0", "region=r1") for f in t.storage.list_files(p)
        }

    before = files()
    outcome = _late(tasks[0])
    t.storage.clear_cache()
    assert files() == before, f"a late compaction attempt ({outcome}) changed or added data files"
    same(t.refresh().read(), want, f"snapshot after a late compaction attempt ({outcome})")
    same(hudi_rs_s3(uri, s3_server.options), want, f"hudi-rs snapshot after a late compaction attempt ({outcome})")
    assert outcome.startswith("refused") and plan.instant in outcome, outcome
