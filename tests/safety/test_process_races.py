"""Separate OS processes racing on one table, on the local file system and on the session's S3 server.

Each scenario builds a table, then starts its operations as child processes that open the table first and then wait
for a common start time (so they really overlap): a write landing while a compaction plan is scheduled or run, a
clean while a compaction runs, a rollback of the last write while another process writes, two runs of one plan.
Every child must end either with success or with an error of the ``EvtError`` hierarchy. Afterwards:

* our snapshot (in a fresh object) and hudi-rs's equal the answer of *some* serial order of the operations that
  reported success (the writes touch shared keys with increasing ordering values; compactions, cleans and
  unsuccessful operations change no answer);
* no file a live slice needs is missing and no visible symlink dangles;
* the documented recovery — roll back deltacommits and rollbacks left pending, run the compactions left pending (a
  1.x plan that a write requested before it completed after is refused: unschedule it and schedule again) — keeps
  that answer (ours and hudi-rs's), and the table takes a further write.

``EVT_SAFETY3_RACES`` (default 1) repeats every scenario with other start offsets and seeds, and above 1 runs more
scenarios on S3 (the long run uses e.g. 10).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.errors import PlanValidationError
from tests.conftest import REPO_ROOT, S3Server
from tests.oracle import Oracle
from tests.services import missing_live_files, visible_dangling_symlinks
from tests.tables import BASE, COLUMNS, create, rows

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

REPEATS = int(os.environ.get("EVT_SAFETY3_RACES", "1"))

CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    import pyarrow.parquet as pq
    import evt_toolkit as evt
    from evt_toolkit.errors import EvtError

    uri, action, start, *args = sys.argv[1:]
    t = evt.HudiTable.open(uri, storage_options=json.loads(os.environ["EVT_TEST_STORAGE_OPTIONS"]) or None)
    t.timeline
    time.sleep(max(0.0, float(start) - time.time()))
    try:
        out = None
        if action == "write":
            out = t.write(pq.read_table(args[0]), "upsert")
        elif action == "schedule":
            from evt_toolkit.compaction import EventTimeBasedCompactionStrategy

            c = t.compaction.schedule(
                EventTimeBasedCompactionStrategy(threshold=int(args[0])), link_mode=args[1], link_timing=args[2]
            )
            out = c.instant if c else None
        elif action == "run":
            t.compaction.run(args[0])
            out = args[0]
        elif action == "clean":
            out = len(t.clean("KEEP_LATEST_FILE_VERSIONS", 1, dry_run=False).deleted)
        elif action == "rollback":
            out = t.rollback(args[0]).target
        elif action == "unschedule":
            report = t.compaction.unschedule(args[0], dry_run=False)
            out = report.refused_reason
        print("RESULT " + json.dumps({"ok": True, "out": out}), flush=True)
    except EvtError as exc:
        print("RESULT " + json.dumps({"ok": False, "error": type(exc).__name__, "message": str(exc)[:400]}), flush=True)
    """
)


def _start(uri: str, options: dict[str, str] | None, action: str, start: float, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "EVT_FAULT_AT"}
    env["EVT_TEST_STORAGE_OPTIONS"] = json.dumps(options or {})
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, uri, action, str(start), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )


def _result(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=240)
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT ") :]))
    raise AssertionError(f"a child ended without a result (exit {proc.returncode}): {err[-2500:]}")


def _answer(history: list[pd.DataFrame]) -> list[tuple[Any, ...]]:
    o = Oracle(["id"], ["region"], "ts", "event_time")
    for df in history:
        o.apply("upsert", df)
    r = o.result()
    return sorted(tuple(x) for x in r[COLUMNS].itertuples(index=False)) if len(r) else []


def _rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in COLUMNS) for r in t.select(COLUMNS).to_pylist()) if t.num_rows else []


def _missing(t: evt.HudiTable, local: bool) -> list[str]:
    """Files of the latest (merged) slices that are not there (on S3: not listed)."""
    if local:
        return missing_live_files(t)
    listed = {f.path for f in t.storage.list_files("")}
    slices = t.refresh().view.latest_merged_file_slices()
    need = [f for s in slices for f in ([s.base_file.path] if s.base_file else []) + [lf.path for lf in s.log_files]]
    return [f for f in need if f not in listed]


def _hudi_rs(uri: str, options: dict[str, str] | None) -> list[tuple[Any, ...]]:
    b = hudi.HudiTableBuilder.from_base_uri(uri)
    if options:
        b = b.with_storage_options(options)
    batches = b.build().read()
    return _rows(pa.Table.from_batches(batches)) if batches else []


SCENARIOS = [
    "write_during_schedule",
    "writes_during_run",
    "clean_during_run",
    "rollback_during_write",
    "two_runs",
    "unschedule_during_run",
    "clean_during_schedule",
]


#: On S3 the CI run races writers with a run; the long run (``EVT_SAFETY3_RACES`` > 1) adds the others.
S3_SCENARIOS = ["writes_during_run"] + (
    ["two_runs", "rollback_during_write", "clean_during_run"] if REPEATS > 1 else []
)


def _race(uri: str, options: dict[str, str] | None, work: Path, scenario: str, seed: int) -> None:
    rng = random.Random(seed)
    t = create(uri, "event_time", table_version=rng.choice([6, 9]), storage_options=options)
    history = [rows(range(0, 12), 10, 100), rows(range(6, 18), 20, 700), rows(range(3, 9), 30, 200)]
    instants = [t.write(df) for df in history]
    batches = {n: rows([2 + n, 11 + n, 40 + n], 50 + n, 150 + 400 * n) for n in range(2)}
    paths = {}
    for n, df in batches.items():
        paths[n] = work / f"batch{n}.parquet"
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), paths[n])
    ops: list[tuple[str, ...]] = []
    if scenario == "write_during_schedule":
        ops = [("write", str(paths[0])), ("schedule", str(BASE + 400), rng.choice(["copy", "symlink"]), "schedule")]
    elif scenario == "clean_during_schedule":
        first = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 150))
        assert first is not None
        t.compaction.run(first)
        t.write(rows(range(0, 4), 40, 120))
        ops = [("clean",), ("schedule", str(BASE + 400), rng.choice(["copy", "symlink"]), "schedule")]
        ops += [("write", str(paths[0]))]
    else:
        if scenario != "rollback_during_write":
            link_mode = "copy" if options else rng.choice(["copy", "symlink"])
            c = t.compaction.schedule(
                EventTimeBasedCompactionStrategy(threshold=BASE + 400),
                link_mode=link_mode,
                link_timing=rng.choice(["schedule", "execute"]),
            )
            assert c is not None
        if scenario == "writes_during_run":
            ops = [("run", c.instant), ("write", str(paths[0])), ("write", str(paths[1]))]
        elif scenario == "clean_during_run":
            ops = [("run", c.instant), ("clean",), ("write", str(paths[0]))]
        elif scenario == "rollback_during_write":
            ops = [("rollback", instants[-1]), ("write", str(paths[0]))]
        elif scenario == "two_runs":
            ops = [("run", c.instant), ("run", c.instant)]
        elif scenario == "unschedule_during_run":
            ops = [("run", c.instant), ("unschedule", c.instant), ("write", str(paths[0]))]
    start = time.time() + 3 + rng.random()
    procs = [(op, _start(uri, options, op[0], start + rng.random() * 0.3, *op[1:])) for op in ops]
    results = [(op, _result(p)) for op, p in procs]
    for op, r in results:
        assert r["ok"] or r["error"], (op, r)
    rolled_back = any(op[0] == "rollback" and r["ok"] for op, r in results)
    kept = history[:-1] if rolled_back else history
    if scenario == "clean_during_schedule":
        kept = [*kept, rows(range(0, 4), 40, 120)]
    landed = [batches[int(Path(op[1]).stem[-1])] for op, r in results if op[0] == "write" and r["ok"]]
    serial = [_answer(kept + list(p)) for p in itertools.permutations(landed)]
    what = f"{scenario} (seed {seed}): {[(op[0], r) for op, r in results]}"

    t = evt.HudiTable.open(uri, storage_options=options)
    ours = _rows(t.read())
    assert ours in serial, f"{what}: our snapshot is no serial order of the successful operations"
    if t.config.timeline_layout >= 2 or not t.timeline.pending_compactions():
        assert _hudi_rs(uri, options) in serial, f"{what}: hudi-rs's snapshot is no serial order"
    assert _missing(t, not options) == [], what
    if not options:
        assert visible_dangling_symlinks(t) == [], what

    # The documented recovery: pending writes and rollbacks rolled back, pending compactions run.
    for inst in t.refresh().timeline.instants:
        if inst.action in ("deltacommit", "rollback") and not inst.is_completed:
            t.rollback(inst.time)
    for inst in t.refresh().timeline.pending_compactions():
        try:
            t.compaction.run(inst.time)
        except PlanValidationError as exc:
            # A write landed in a planned slice after the plan listed it (and saw no plan): the run refuses, and
            # its message says to unschedule and schedule again.
            assert "unschedule the plan and schedule again" in str(exc), str(exc)
            assert t.compaction.unschedule(inst.time, dry_run=False).refused_reason is None
            again = t.refresh().compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 400))
            if again is not None:
                t.compaction.run(again)
    t.refresh()
    assert _rows(t.read()) == ours, f"{what}: the recovery changed the snapshot"
    assert _hudi_rs(uri, options) == ours, f"{what}: hudi-rs after the recovery"
    assert _missing(t, not options) == [], what
    more = rows([0, 50], 90, 900)
    t.write(more)
    got = {r["id"]: r["ts"] for r in t.refresh().read(columns=["id", "ts"]).to_pylist()}
    assert got[0] == 90 and got[50] == 90, f"{what}: a write after the recovery is not read"


@pytest.mark.parametrize("repeat", range(REPEATS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_local_processes_race(tmp_path: Path, scenario: str, repeat: int) -> None:
    _race(str(tmp_path / "t"), None, tmp_path, scenario, repeat)


@pytest.mark.parametrize("repeat", range(REPEATS))
@pytest.mark.parametrize("scenario", S3_SCENARIOS)
def test_s3_processes_race(s3_server: S3Server, s3_bucket: str, tmp_path: Path, scenario: str, repeat: int) -> None:
    _race(f"s3a://{s3_bucket}/lake/t", s3_server.options, tmp_path, scenario, 100 + repeat)


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("run", [True, False])
def test_a_write_planned_before_a_compaction_was_scheduled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int, run: bool
) -> None:
    """The race the processes above can hit, made deterministic: a writer has picked its file slices (no plan
    pending) when another process schedules a compaction of them — and runs it — before the writer's ``requested``
    file exists, so the schedule's check for earlier inflight writes cannot see it. On version 6 the writer names its
    logs after the slice it picked; once the compaction completes that slice is an old one, and a write reported as
    successful would never be read. The write must either be read or fail (to be rolled back and written again),
    and the table must end with every reported write read, ours and hudi-rs's."""
    import evt_toolkit.write.writer as writer
    from evt_toolkit.compaction import UnBoundedCompactionStrategy
    from evt_toolkit.errors import EvtError

    t = create(tmp_path / "t", "event_time", buckets=1, table_version=version)
    t.write(rows(range(6), 10, 100))
    first = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert first is not None
    t.compaction.run(first)
    t.write(rows(range(6), 20, 100))
    other = evt.HudiTable.open(tmp_path / "t")
    plan_writes = writer.plan_file_group_writes
    scheduled: list[str] = []

    def compaction_in_between(*args: Any, **kwargs: Any) -> Any:
        if not scheduled:
            c = other.refresh().compaction.schedule(UnBoundedCompactionStrategy())
            assert c is not None
            scheduled.append(c.instant)
            if run:
                other.compaction.run(c)
        return plan_writes(*args, **kwargs)

    monkeypatch.setattr(writer, "plan_file_group_writes", compaction_in_between)
    try:
        t.write(rows([0, 1], 30, 100))
        wrote = True
    except EvtError:
        wrote = False
    monkeypatch.setattr(writer, "plan_file_group_writes", plan_writes)
    t.refresh()
    for inst in t.timeline.instants:  # the documented recovery
        if inst.action == "deltacommit" and not inst.is_completed:
            t.rollback(inst.time)
    for inst in t.refresh().timeline.pending_compactions():
        try:
            t.compaction.run(inst.time)
        except EvtError:  # a plan that misses a completed write's log: scheduled again
            assert t.compaction.unschedule(inst.time, dry_run=False).refused_reason is None
            again = t.refresh().compaction.schedule(UnBoundedCompactionStrategy())
            assert again is not None
            t.compaction.run(again)
    want = 30 if wrote else 20
    got = {r["id"]: r["ts"] for r in t.refresh().read(columns=["id", "ts"]).to_pylist()}
    assert (got[0], got[1], got[2]) == (want, want, 20), f"the write {'succeeded' if wrote else 'failed'}: {got}"
    assert {r[0]: r[2] for r in _hudi_rs(str(t.path), None)}[0] == want
    t.write(rows([0], 40, 100))
    assert {r["id"]: r["ts"] for r in t.refresh().read(columns=["id", "ts"]).to_pylist()}[0] == 40


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_into_the_new_slice_while_its_compaction_is_unscheduled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """An unschedule lists the planned slices (no writer's log in the new one yet), then a write that saw the plan
    puts its log into the new slice and completes, then the unschedule deletes the plan. On version 6 that log is
    named after the plan's instant, which is then on no timeline: the completed write would never be read. Either
    the write fails or the unschedule refuses (or restores the plan): every reported write is read."""
    import evt_toolkit.compaction.unschedule as unschedule
    from evt_toolkit.compaction import UnBoundedCompactionStrategy
    from evt_toolkit.errors import EvtError

    t = create(tmp_path / "t", "event_time", buckets=1, table_version=version)
    t.write(rows(range(6), 10, 100))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    other = evt.HudiTable.open(tmp_path / "t")
    deleting = unschedule.has_metadata_table  # called after the listing, right before the deletes
    wrote: list[bool] = []

    def write_in_between(table: Any) -> bool:
        if not wrote:
            try:
                other.write(rows([0, 1], 30, 100))
                wrote.append(True)
            except EvtError:
                wrote.append(False)
        return deleting(table)

    monkeypatch.setattr(unschedule, "has_metadata_table", write_in_between)
    report = t.compaction.unschedule(c.instant, dry_run=False)
    monkeypatch.setattr(unschedule, "has_metadata_table", deleting)
    t.refresh()
    for inst in t.timeline.instants:
        if inst.action == "deltacommit" and not inst.is_completed:
            t.rollback(inst.time)
    if report.refused_reason is not None:
        assert c.instant in [i.time for i in t.refresh().timeline.pending_compactions()]
        t.compaction.run(c.instant)
    want = 30 if wrote[0] else 10
    got = {r["id"]: r["ts"] for r in t.refresh().read(columns=["id", "ts"]).to_pylist()}
    assert (got[0], got[1], got[2]) == (want, want, 10), f"write {'reported' if wrote[0] else 'failed'}: {got}"
    assert {r[0]: r[2] for r in _hudi_rs(str(t.path), None)}[0] == want
    assert _missing(t, True) == []


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
def test_a_write_completing_while_a_compaction_is_planned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int, link_mode: str
) -> None:
    """A schedule lists the slices, then a write that saw no plan adds a log to a listed slice and completes (its
    own look for a superseding plan finds none), then the schedule writes its plan. On version 6 the plan misses a
    committed log of the slice it supersedes, so it could never run: the schedule must notice that itself and hand
    back a plan that runs as it is — no unschedule by the operator — and the write must be read, ours and hudi-rs's."""
    import evt_toolkit.compaction.schedule as schedule

    t = create(tmp_path / "t", "event_time", buckets=1, table_version=version)
    t.write(rows(range(6), 10, 100))
    t.write(rows(range(6), 20, 100))
    other = evt.HudiTable.open(tmp_path / "t")
    listed = schedule.slice_infos
    wrote: list[str] = []

    def write_after_listing(*args: Any, **kwargs: Any) -> Any:
        found = listed(*args, **kwargs)
        if not wrote:
            wrote.append(other.refresh().write(rows([0, 1], 30, 100)))
        return found

    monkeypatch.setattr(schedule, "slice_infos", write_after_listing)
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 400), link_mode=link_mode)
    monkeypatch.setattr(schedule, "slice_infos", listed)
    assert wrote and c is not None
    assert [i.time for i in t.refresh().timeline.pending_compactions()] == [c.instant]
    assert t.compaction.validate(c).ok
    t.compaction.run(c)
    got = {r["id"]: r["ts"] for r in t.refresh().read(columns=["id", "ts"]).to_pylist()}
    assert (got[0], got[1], got[2]) == (30, 30, 20), got
    assert {r[0]: r[2] for r in _hudi_rs(str(t.path), None)} == got
    assert _missing(t, True) == []
    assert visible_dangling_symlinks(t) == []
