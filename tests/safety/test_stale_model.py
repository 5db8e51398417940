"""Seeded sequences of long-lived handles taking turns on ONE table, each keeping whatever it cached, against the model.

A data engineer's notebook keeps a ``HudiTable`` open for hours — with a compaction preview, a threshold widget and a
compaction runner built from it — while other handles, the ``evt`` command and other notebooks write, schedule, run,
unschedule, roll back, repair and clean the same table. Here three handles (and the ``evt`` command, run in this
process) take turns at random; operations are strictly serial, but a handle is never refreshed for the others' sake,
so it keeps its timeline, listing, listed sizes, fetched bytes, previews, threshold and runner models and the
``ScheduledCompaction`` objects it was handed. The steps:

* writes: upserts with late records and soft deletes, deletes with and without an ordering value, a write that fails
  half-way (left inflight, rolled back later by any handle or the command), a failed or the last write rolled back
  and its batch written again by another handle (on version 6: the same log names and sizes);
* compactions: a preview, then — many steps later, after others changed the table — a schedule of that preview's
  strategy (through the handle or a ``CompactionRunnerModel`` built on a ``ThresholdPreviewModel``), in every link
  mode and timing; a run of a plan another handle scheduled, through a stale ``ScheduledCompaction`` or a stale runner
  model; a run that fails in a task (left inflight), run again or rolled back by another handle; unschedules through
  stale objects, of plans that may have run or gone meanwhile;
* services: the rollback of any write (the toolkit refuses what is not the last one), of a failed write or of an
  inflight run; repair; cleans with both policies and several retained counts, after a dry run made long before;
* the ``evt`` command: ``schedule``, ``run``, ``unschedule --yes``, ``rollback --yes``, ``clean run --yes``,
  ``repair --yes``;
* reads by stale handles: snapshot and read-optimized views, time travel to a write their timeline holds,
  ``file_slices``, ``ro_freshness``.

The oracle is :mod:`tests.safety.model` (an independent model of Hudi's answers per file group and key), fed only
what the table says was committed. After every step:

* a fresh handle's snapshot equals the model, and so does hudi-rs's (when no compaction is pending, as in the model
  test); its read-optimized view equals the model's base rows and hudi-rs's;
* no file a live slice needs is missing (every base file and log of the latest merged slices exists);
* every pending plan validates (a plan whose links are made at run time may lack them);
* every stale handle's read is the table as it was when that handle loaded its timeline, or as it was at any later
  step — or an ``EvtError`` — never an answer the table never gave (a partial one, a record lost or resurrected);
* a schedule plans exactly what a new process would preview for its strategy at that moment (a fresh handle, none
  of the facts this process cached), however old the preview it came from.

Run on the local file system and on the session's S3 server, table versions 6 and 9. ``EVT_STALE_SEQUENCES``
(default 1) sequences of ``EVT_STALE_STEPS`` steps (default 30 locally, 16 on S3) per configuration, from seed
``EVT_STALE_SEED`` (default 0; each configuration adds its own offset); a failure names its seed and steps, and
``EVT_STALE_TRACE=1`` prints every sequence's steps and how the stale reads ended.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.cli.app import main as evt_main
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, event_times
from evt_toolkit.compaction.preview import CompactionPreview
from evt_toolkit.compaction.schedule import ScheduledCompaction
from evt_toolkit.compaction.strategy import CompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.format.records import CompactionPlan
from evt_toolkit.services.clean_planner import KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS
from evt_toolkit.table.timeline import DELTA_COMMIT
from evt_toolkit.widgets.models import CompactionRunnerModel, ThresholdPreviewModel
from tests.safety.model import Model, Rec
from tests.safety.test_model import _as_table, _group, _same, _with_model_rows
from tests.services import Crash, failed_write

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

SEQUENCES = int(os.environ.get("EVT_STALE_SEQUENCES", "1"))
STEPS = int(os.environ.get("EVT_STALE_STEPS", "0"))  # 0: 30 steps locally, 16 on S3
FIRST_SEED = int(os.environ.get("EVT_STALE_SEED", "0"))
BASE = 1_700_000_000_000
COLS = ["id", "region", "ts", "ev", "v"]
HANDLES = 3


@dataclass
class Handle:
    """A long-lived handle and what its notebook holds: previews, widget models, plans it was handed."""

    name: str
    table: evt.HudiTable
    strategies: list[CompactionStrategy] = field(default_factory=list)
    previews: list[ThresholdPreviewModel] = field(default_factory=list)
    runners: list[CompactionRunnerModel] = field(default_factory=list)
    scheduled: list[ScheduledCompaction] = field(default_factory=list)
    dry_cleans: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class State:
    """One committed state of the table: what every query answered then."""

    key: frozenset[str]
    snapshot: pa.Table
    ro: pa.Table
    writes: tuple[str, ...]  # the committed writes, oldest first


class StaleRun:
    """One table, three handles, the command, one model."""

    def __init__(self, uri: str, options: dict[str, str] | None, version: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.uri = uri
        self.options = options
        self.version = version
        self.merge_mode = self.rng.choice(["event_time", "event_time", "commit_time"])
        t = evt.HudiTable.create(
            uri,
            "stale",
            "id",
            partition_by="region",
            ordering_field="ts",
            event_time_field="ev",
            buckets=self.rng.choice([1, 2]),
            merge_mode=self.merge_mode,
            table_version=version,
            storage_options=options,
        )
        self.model = Model(event_time=self.merge_mode == "event_time")
        self.ts = 100
        self.group_of: dict[str, str] = {}
        self.writes: list[tuple[str, list[str]]] = []  # committed writes and the groups each wrote into
        self.plans: dict[str, CompactionPlan] = {}
        self.history: list[State] = []
        self.loaded_at: dict[str, int] = {}  # handle -> index in history when it last loaded its timeline
        self.log: list[str] = []
        self.handles = [Handle(f"h{i}", evt.HudiTable.open(uri, options)) for i in range(HANDLES)]
        self.stale_reads = {"as_loaded": 0, "later_state": 0, "refused": 0}
        self.batches: dict[str, tuple[pd.DataFrame, str]] = {}  # written, not yet given to the model
        self.written: dict[str, tuple[pd.DataFrame, str]] = {}
        self.failed_batches: dict[str, pd.DataFrame] = {}
        self.after: dict[str, pa.Table] = {}  # the snapshot right after each write committed
        self._write(t, self._upsert_frame([(i, 500, False) for i in range(8)], late=False), "upsert")
        self._settle()

    # -- handles ---------------------------------------------------------------------------------------------------
    def fresh(self) -> evt.HudiTable:
        return evt.HudiTable.open(self.uri, self.options)

    def pick(self) -> Handle:
        return self.rng.choice(self.handles)

    def _cli(self, *argv: str) -> int:
        args = [*argv]
        for k, v in (self.options or {}).items():
            args += ["--storage-option", f"{k}={v}"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            code = evt_main(args)
        assert code in (0, 1), f"evt {' '.join(argv)} exited {code}: {err.getvalue()[-2000:]}"
        return code

    # -- batches -----------------------------------------------------------------------------------------------------
    def _upsert_frame(self, items: list[tuple[int, int, bool]], *, late: bool) -> pd.DataFrame:
        self.ts += 10
        ts = [self.ts - (self.rng.randint(1, 25) if late and self.rng.random() < 0.6 else 0) for _ in items]
        items = [(i, ev, d and str(i) in self.group_of) for i, ev, d in items]
        return pd.DataFrame(
            {
                "id": pd.array([i for i, _, _ in items], dtype="int64"),
                "region": [f"r{i % 2}" for i, _, _ in items],
                "ts": pd.array(ts, dtype="int64"),
                "ev": pd.array([BASE + ev for _, ev, _ in items], dtype="int64"),
                "v": [float(self.ts * 100 + i) for i, _, _ in items],
                "_hoodie_is_deleted": [d for _, _, d in items],
            }
        )

    def _delete_frame(self, ids: list[int], with_ordering: bool) -> pd.DataFrame:
        self.ts += 10
        df = pd.DataFrame({"id": pd.array(ids, dtype="int64"), "region": [f"r{i % 2}" for i in ids]})
        if with_ordering:
            df["ts"] = pd.array([self.ts - self.rng.randint(0, 30) for _ in ids], dtype="int64")
        return df

    def _write(self, t: evt.HudiTable, df: pd.DataFrame, op: str) -> str:
        instant = t.write(df, op)
        if instant:
            self.batches[instant] = (df, op)
            self.written[instant] = (df, op)
        return instant

    # -- the model -----------------------------------------------------------------------------------------------------
    def _learn_groups(self, f: evt.HudiTable) -> None:
        snap = f.read(columns=["id", "_hoodie_partition_path", "_hoodie_file_name"])
        for i, part, name in zip(
            snap["id"].to_pylist(),
            snap["_hoodie_partition_path"].to_pylist(),
            snap["_hoodie_file_name"].to_pylist(),
            strict=True,
        ):
            self.group_of.setdefault(str(i), _group(part, str(name)))

    def _apply_write(self, f: evt.HudiTable, instant: str) -> None:
        df, op = self.batches.pop(instant)
        if any(str(i) not in self.group_of for i in df["id"]):
            self._learn_groups(f)
        best: dict[str, dict[str, Any]] = {}
        for row in df.to_dict("records"):
            k = str(row["id"])
            if k not in best or "ts" not in row or row["ts"] >= best[k]["ts"]:
                best[k] = row
        units: dict[str, list[Rec]] = {}
        for k, row in best.items():
            group = self.group_of.get(k)
            assert group is not None, f"key {k} was written but is nowhere in the table"
            if op == "delete" and group not in self.model.groups:
                continue
            if op == "delete":
                rec = Rec(k, "del" if "ts" in row else "ct", row.get("ts"))
            else:
                rec = Rec(k, "data", int(row["ts"]), {c: row[c] for c in [*COLS, "_hoodie_is_deleted"]})
            units.setdefault(group, []).append(rec)
        for group, recs in units.items():
            self.model.write(group, recs)
        self.writes.append((instant, list(units)))
        self.after[instant] = _as_table(self.model.snapshot())

    def _apply_rollback(self, instant: str) -> None:
        assert self.writes and self.writes[-1][0] == instant, (
            f"write {instant} was rolled back, but the last write is {self.writes[-1][0] if self.writes else None}"
        )
        _, groups = self.writes.pop()
        for group in groups:
            g = self.model.groups[group]
            g.units.pop()
            if not g.units and not g.base:
                del self.model.groups[group]

    def _apply_compaction(self, f: evt.HudiTable, c: str) -> None:
        plan = self.plans[c]
        ro_by_group: dict[str, dict[str, dict[str, Any] | None]] = {}
        ro = f.read("read_optimized")
        for row in ro.select([*COLS, "_hoodie_partition_path", "_hoodie_file_name"]).to_pylist():
            group = _group(row["_hoodie_partition_path"], row["_hoodie_file_name"])
            ro_by_group.setdefault(group, {})[str(row["id"])] = {c2: row[c2] for c2 in COLS}
        for op in plan.operations:
            group = _group(op.partition_path, op.file_id)
            seen = ro_by_group.get(group, {})
            problems, _ = self.model.compact(group, len(op.delta_files), _with_model_rows(seen, self.model, group))
            assert not problems, problems

    def _settle(self) -> None:
        """Feed the model what the table committed since the last step, then record the state every query shows."""
        f = self.fresh()
        tl = f.timeline
        done_writes = [i.time for i in tl.instants if i.action == DELTA_COMMIT and i.is_completed]
        known = [w for w, _ in self.writes]
        for w in reversed(known):
            if w not in done_writes:
                self._apply_rollback(w)
        for w in done_writes:
            if w not in known:
                assert w in self.batches, f"deltacommit {w} completed, but no step wrote it"
                self._apply_write(f, w)
        done_compactions = [i.time for i in tl.instants if i.action == "commit" and i.is_completed]
        for c in done_compactions:
            if c in self.plans:
                self._apply_compaction(f, c)
                del self.plans[c]
        for inst in tl.pending_compactions():
            if inst.time not in self.plans:
                self.plans[inst.time] = tl.compaction_plan(inst)
        key = _key(tl)
        snap, ro = f.read(), f.read("read_optimized")
        self.history.append(State(key, snap, ro, tuple(w for w, _ in self.writes)))
        self._check_fresh(f, snap, ro)

    # -- invariants ----------------------------------------------------------------------------------------------------
    def _rs(self, *, ro: bool = False) -> pa.Table:
        b = hudi.HudiTableBuilder.from_base_uri(self.uri)
        if self.options:
            b = b.with_storage_options(self.options)
        if ro:
            b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
        batches = b.build().read()
        return pa.Table.from_batches(batches) if batches else pa.table({c: pa.array([], pa.int64()) for c in COLS})

    def _check_fresh(self, f: evt.HudiTable, snap: pa.Table, ro: pa.Table) -> None:
        expected = _as_table(self.model.snapshot())
        _same(snap, expected, "a fresh handle's snapshot vs the model")
        _same(ro, _as_table(self.model.ro()), "a fresh handle's RO view vs the model's base rows")
        if not f.timeline.pending_compactions():
            _same(self._rs(), expected, "hudi-rs snapshot vs the model")
        _same(self._rs(ro=True), ro, "hudi-rs RO vs ours")
        missing = [
            p
            for s in f.view.latest_merged_file_slices()
            for p in ([s.base_file.path] if s.base_file else []) + [lf.path for lf in s.log_files]
            if not _exists(f, p)
        ]
        assert missing == [], f"files of live slices are missing: {missing}"
        for inst in f.timeline.pending_compactions():
            report = f.compaction.validate(inst.time)
            assert report.ok or all("link" in p for p in report.problems), report.problems

    def _stale_read(self, h: Handle) -> None:
        """A handle that did not act reads from what it cached: the table as it was when it loaded its timeline, as
        it was at a later step, or an EvtError — never anything else."""
        t = h.table
        what = self.rng.choice(["snapshot", "read_optimized", "time_travel", "file_slices", "freshness"])
        as_of = ""
        try:
            if what == "time_travel":
                done = [i.time for i in t.timeline.instants if i.action == DELTA_COMMIT and i.is_completed]
                if not done:
                    return
                as_of = self.rng.choice(done)
                got = t.read(as_of=as_of)
            elif what == "snapshot":
                got = t.read()
            elif what == "read_optimized":
                got = t.read("read_optimized")
            elif what == "file_slices":
                t.file_slices()
                return
            else:
                t.ro_freshness()
                return
        except evt.EvtError as exc:
            self.stale_reads["refused"] += 1
            self.log.append(f"  {h.name} stale {what}: {type(exc).__name__}: {str(exc)[:160]}")
            return
        key = _key(t.timeline)
        since = self.loaded_at.get(h.name, 0)
        candidates = [i for i, s in enumerate(self.history) if i >= since or s.key == key]
        candidates.sort(key=lambda i: self.history[i].key != key)  # the state of its own timeline first
        if what == "time_travel":
            # As of a write: the snapshot right after the last write at or before it that the table held committed.
            answers = [self._as_of(self.history[i].writes, as_of) for i in candidates]
        else:
            answers = [self.history[i].snapshot if what == "snapshot" else self.history[i].ro for i in candidates]
        for i, want in zip(candidates, answers, strict=True):
            if _equal(got, want):
                exact = self.history[i].key == key
                self.stale_reads["as_loaded" if exact else "later_state"] += 1
                if not exact:
                    now = len(self.history) - 1
                    self.log.append(f"  {h.name} stale {what}: state {i} (loaded at {since}, now {now})")
                return
        raise AssertionError(
            f"{h.name}'s {what} ({got.num_rows} rows, its timeline ending {sorted(key)[-1:]}) is no state the table "
            f"was in since it loaded its timeline (states {candidates})"
        )

    def _as_of(self, writes: tuple[str, ...], instant: str) -> pa.Table:
        before = [w for w in writes if w <= instant]
        return self.after[before[-1]] if before else _as_table({})

    # -- steps -----------------------------------------------------------------------------------------------------
    def step(self) -> None:
        rules: list[tuple[int, Callable[[], str]]] = [
            (5, self.upsert),
            (2, self.delete),
            (1, self.fail_write),
            (2, self.retry),
            (3, self.preview),
            (3, self.schedule_from_preview),
            (3, self.run_a_plan),
            (1, self.fail_a_run),
            (2, self.unschedule),
            (2, self.rollback),
            (1, self.repair),
            (2, self.clean),
            (2, self.command),
            (1, self.refresh),
        ]
        rule = self.rng.choices([r for _, r in rules], weights=[w for w, _ in rules])[0]
        before = {h.name: id(h.table._timeline) for h in self.handles}
        self.log.append(rule())
        self._settle()
        for h in self.handles:
            # A handle that loaded its timeline during the step (it acted, or was refreshed) holds the new state.
            if h.table._timeline is None or id(h.table._timeline) != before[h.name]:
                self.loaded_at[h.name] = len(self.history) - 1
        for h in self.handles:
            if self.rng.random() < 0.5:
                if h.table._timeline is None:
                    self.loaded_at[h.name] = len(self.history) - 1
                self._stale_read(h)

    def upsert(self) -> str:
        h = self.pick()
        items = [(self.rng.randint(0, 11), self.rng.randint(0, 1000), self.rng.random() < 0.1) for _ in range(4)]
        df = self._upsert_frame(items, late=self.rng.random() < 0.5)
        try:
            instant = self._write(h.table, df, "upsert")
        except evt.WriteError as exc:  # a v6 write into a plan's slice while it is being unscheduled, say
            return f"{h.name} upsert refused: {exc}"
        return f"{h.name} upsert {instant} {sorted(df['id'].tolist())}"

    def delete(self) -> str:
        h = self.pick()
        known = sorted({int(k) for k in self.group_of} & set(self.rng.sample(range(12), 3)))
        if not known:
            return "delete: nothing known"
        df = self._delete_frame(known, self.rng.random() < 0.6)
        instant = self._write(h.table, df, "delete")
        return f"{h.name} delete {instant} {known} ({'with' if 'ts' in df else 'without'} ordering)"

    def fail_write(self) -> str:
        h = self.pick()
        df = self._upsert_frame([(self.rng.randint(0, 11), 100, False) for _ in range(3)], late=False)
        failed = failed_write(h.table, df)
        self.failed_batches[failed] = df
        return f"{h.name} failed write {failed}"

    def retry(self) -> str:
        """Roll back a failed write, or the last write, and write the same batch again (on version 6: into the
        same log names, with the same sizes) — what a user does after a failure or an undo."""
        tl = self.fresh().timeline
        failed = [i.time for i in tl.instants if i.action == DELTA_COMMIT and not i.is_completed]
        failed = [f for f in failed if f in self.failed_batches]
        last = self.writes[-1][0] if self.writes else None
        if failed and (last is None or self.rng.random() < 0.6):
            target, df, op = failed[0], self.failed_batches.pop(failed[0]), "upsert"
        elif last is not None and last in self.written:
            target, (df, op) = last, self.written[last]
        else:
            return "retry: nothing"
        h, other = self.pick(), self.pick()
        if self.rng.random() < 0.5:  # someone looks first (the preview shows the failed write's blocks)
            watcher = self.pick()
            with contextlib.suppress(evt.ObjectNotFoundError):
                watcher.table.compaction.preview(self._strategy())
        try:
            h.table.rollback(target)
        except evt.RollbackError as exc:
            return f"{h.name} retry {target}: refused ({str(exc)[:80]})"
        self._settle()  # a state of its own: a handle that listed before the rollback may read it
        instant = self._write(other.table, df, op)
        return f"{h.name} rolled back {target}, {other.name} wrote it again: {instant}"

    def _strategy(self) -> CompactionStrategy:
        if self.rng.random() < 0.3:
            return UnBoundedCompactionStrategy()
        return EventTimeBasedCompactionStrategy(threshold=BASE + self.rng.randint(0, 1000))

    def preview(self) -> str:
        h = self.pick()
        s = self._strategy()
        # A preview reads the handle's own listing: a file a rollback or clean removed since fails it, by name.
        try:
            if isinstance(s, EventTimeBasedCompactionStrategy) and self.rng.random() < 0.5:
                m = ThresholdPreviewModel(h.table, threshold=s.threshold_ms)
                h.previews.append(m)
                return f"{h.name} threshold preview at {m.threshold_ms - BASE}"
            h.table.compaction.preview(s)
        except evt.ObjectNotFoundError as exc:
            return f"{h.name} preview {s!r}: {type(exc).__name__}"
        h.strategies.append(s)
        return f"{h.name} preview {s!r}"

    def schedule_from_preview(self) -> str:
        h = self.pick()
        link_mode = self.rng.choice(["copy", "symlink"]) if self.options is None else "copy"
        link_timing = self.rng.choice(["schedule", "execute"])
        if h.previews and self.rng.random() < 0.5:
            m = h.previews[self.rng.randrange(len(h.previews))]
            strategy = m.strategy()
            runner = CompactionRunnerModel(h.table, m, link_mode=link_mode, link_timing=link_timing)
            shown = self._truth(strategy)
            c = runner.schedule()
            assert c is not None or runner.last_error is None or "PendingTableServiceError" in runner.last_error, (
                f"the runner did not schedule: {runner.last_error}"
            )
            if c is not None:
                h.runners.append(runner)
        else:
            strategy = h.strategies[self.rng.randrange(len(h.strategies))] if h.strategies else self._strategy()
            shown = self._truth(strategy)
            try:
                c = h.table.compaction.schedule(strategy, link_mode=link_mode, link_timing=link_timing)
            except evt.PendingTableServiceError:
                return f"{h.name} schedule {strategy!r}: refused (pending)"
        if c is None:
            return f"{h.name} schedule {strategy!r}: nothing"
        h.scheduled.append(c)
        planned = {(op.partition_path, op.file_id): tuple(op.delta_files) for op in c.plan.operations}
        per_slice = shown.per_slice.to_pylist()
        wanted = {
            (r["partition_path"], r["file_id"]): tuple(r["compacted_log_files"])
            for r in per_slice
            if r["selected"] and r["pending_compaction"] is None
        }
        assert planned == wanted, f"compaction {c.instant} planned {planned}, a fresh preview showed {wanted}"
        return f"{h.name} schedule {c.instant} {strategy!r} {link_mode}/{link_timing}"

    def _truth(self, strategy: CompactionStrategy) -> CompactionPreview:
        """What a new process would preview now: a fresh handle, with none of the facts this process cached (which
        the schedule that follows keeps using)."""
        saved = dict(event_times._CACHE)
        event_times.clear_cache()
        try:
            return self.fresh().compaction.preview(strategy)
        finally:
            event_times.clear_cache()
            event_times._CACHE.update(saved)

    def _stale_plan(self) -> tuple[Handle, ScheduledCompaction | CompactionRunnerModel | str] | None:
        """A plan some handle holds (maybe run or gone since), or the instant of one pending now."""
        held: list[tuple[Handle, ScheduledCompaction | CompactionRunnerModel]] = [
            (h, c) for h in self.handles for c in [*h.scheduled, *h.runners]
        ]
        pending = [i.time for i in self.fresh().timeline.pending_compactions()]
        if held and (not pending or self.rng.random() < 0.6):
            return held[self.rng.randrange(len(held))]
        if pending:
            return self.pick(), self.rng.choice(pending)
        return None

    def run_a_plan(self) -> str:
        got = self._stale_plan()
        if got is None:
            return "run: no plan"
        holder, c = got
        h = self.pick()  # whoever runs it: the holder's object, another handle's table
        if isinstance(c, CompactionRunnerModel):
            if c.state not in ("scheduled",):
                return f"run: {holder.name}'s runner is {c.state}"
            r = c.run()
            return f"{holder.name} runner run: {c.state} {c.last_error or ''}"
        instant = c if isinstance(c, str) else c.instant
        try:
            r = h.table.compaction.run(c)
        except evt.EvtError as exc:
            assert instant not in {i.time for i in self.fresh().timeline.pending_compactions()} or isinstance(
                exc, evt.PlanValidationError | evt.CompactionExecutionError
            ), f"a pending plan {instant} failed to run: {exc!r}"
            return f"{h.name} run {instant}: {type(exc).__name__}"
        return f"{h.name} run {r.instant}"

    def fail_a_run(self) -> str:
        pending = [i.time for i in self.fresh().timeline.pending_compactions()]
        if not pending:
            return "failed run: no plan"
        h = self.pick()
        c = self.rng.choice(pending)

        def crash(task: object, stage: str) -> None:
            if stage == "written":
                raise Crash("task lost")

        with contextlib.suppress(Crash, evt.EvtError):
            h.table.compaction.run(c, fault_hook=crash)
        return f"{h.name} failed run {c}"

    def unschedule(self) -> str:
        got = self._stale_plan()
        if got is None:
            return "unschedule: no plan"
        holder, c = got
        if isinstance(c, CompactionRunnerModel):
            c.unschedule(dry_run=self.rng.random() < 0.3)
            return f"{holder.name} runner unschedule: {c.state} {c.last_error or ''}"
        h = self.pick()
        try:
            report = h.table.compaction.unschedule(c, dry_run=False)
        except evt.EvtError as exc:
            return f"{h.name} unschedule: {type(exc).__name__}"
        return f"{h.name} unschedule {report.instant}: {report.refused_reason or 'done'}"

    def rollback(self) -> str:
        h = self.pick()
        tl = self.fresh().timeline
        failed = [i.time for i in tl.instants if i.action == DELTA_COMMIT and not i.is_completed]
        inflight = [i.time for i in tl.pending_compactions() if i.is_inflight]
        writes = [w for w, _ in self.writes]
        choices = failed + inflight + writes[-2:]
        if not choices:
            return "rollback: nothing"
        target = self.rng.choice(choices)
        try:
            r = h.table.rollback(target)
        except evt.RollbackError as exc:
            return f"{h.name} rollback {target}: refused ({str(exc)[:80]})"
        return f"{h.name} rollback {r.target}"

    def repair(self) -> str:
        h = self.pick()
        r = h.table.compaction.repair(dry_run=False, older_than_s=0)
        return f"{h.name} repair {r}"[:200]

    def clean(self) -> str:
        h = self.pick()
        if h.dry_cleans and self.rng.random() < 0.6:
            policy, retained = h.dry_cleans.pop(self.rng.randrange(len(h.dry_cleans)))
        else:
            policy = self.rng.choice([KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS])
            retained = self.rng.randint(1, 3)
        if self.rng.random() < 0.4:
            h.table.clean(policy, retained)  # looked at now, run later
            h.dry_cleans.append((policy, retained))
            return f"{h.name} clean dry run {policy} {retained}"
        r = h.table.clean(policy, retained, dry_run=False)
        return f"{h.name} clean {policy} {retained}: {len(r.deleted)} deleted"

    def command(self) -> str:
        tl = self.fresh().timeline
        pending = [i.time for i in tl.pending_compactions()]
        what = self.rng.choice(["schedule", "run", "unschedule", "rollback", "clean", "repair"])
        if what == "schedule":
            code = self._cli("schedule", self.uri, "--threshold", str(BASE + self.rng.randint(0, 1000)))
        elif what in ("run", "unschedule"):
            if not pending:
                return f"evt {what}: no plan"
            c = self.rng.choice(pending)
            code = self._cli("run", self.uri, c) if what == "run" else self._cli("unschedule", self.uri, c, "--yes")
        elif what == "rollback":
            failed = [i.time for i in tl.instants if i.action == DELTA_COMMIT and not i.is_completed]
            targets = failed + [w for w, _ in self.writes[-1:]]
            if not targets:
                return "evt rollback: nothing"
            code = self._cli("rollback", self.uri, self.rng.choice(targets), "--yes")
        elif what == "clean":
            policy = self.rng.choice([KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS])
            code = self._cli("clean", "run", self.uri, "--policy", policy, "--retained", "1", "--yes")
        else:
            code = self._cli("repair", self.uri, "--yes")
        return f"evt {what}: exit {code}"

    def refresh(self) -> str:
        h = self.pick()
        h.table.refresh()
        return f"{h.name} refresh"


def _key(tl: Any) -> frozenset[str]:
    """A committed state: the completed writes and compactions."""
    return frozenset(i.time for i in tl.instants if i.is_completed and i.action in (DELTA_COMMIT, "commit"))


def _equal(a: pa.Table, b: pa.Table) -> bool:
    try:
        _same(a, b, "")
    except AssertionError:
        return False
    return True


def _exists(t: evt.HudiTable, rel: str) -> bool:
    if t.storage.is_object_store:
        return t.storage.is_file(rel)
    return os.path.exists(t.storage.full_path(rel))  # follows symlinks: a dangling one is missing


def _run(uri: str, options: dict[str, str] | None, version: int) -> None:
    steps = STEPS or (16 if options else 30)
    offset = 1000 * version + (500 if options else 0)  # each configuration its own sequences
    for seed in range(FIRST_SEED + offset, FIRST_SEED + offset + SEQUENCES):
        run = StaleRun(uri if SEQUENCES == 1 else f"{uri}-{seed}", options, version, seed)
        for _ in range(steps):
            try:
                run.step()
            except BaseException as exc:
                steps = "\n  ".join(run.log)
                raise AssertionError(f"seed {seed}, version {version}, {uri}: after\n  {steps}\n{exc}") from exc
        if os.environ.get("EVT_STALE_TRACE"):
            print(f"seed {seed} v{version} {run.merge_mode}: {run.stale_reads}\n  " + "\n  ".join(run.log))


@pytest.mark.parametrize("version", [6, 9])
def test_stale_handles_local(tmp_path: Path, version: int) -> None:
    _run(str(tmp_path / "t"), None, version)


@pytest.mark.parametrize("version", [6, 9])
def test_stale_handles_s3(s3_server: Any, version: int) -> None:
    bucket = s3_server.new_bucket("stale")
    _run(f"s3://{bucket}/t", dict(s3_server.options), version)
