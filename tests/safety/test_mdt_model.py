"""Random lifecycles of stock Hudi 1.x tables *with a metadata table*, against a plain dict of what was committed.

The model test (:mod:`tests.safety.test_model`) runs tables this toolkit creates, which have no metadata table. Here
the table is a copy of a stock v8/v9 fixture whose metadata table the toolkit maintains, and the steps mix our
writes (SIMPLE index: updates, deletes, re-inserts), failed writes, rollbacks of failed and of the last writes,
event-time and unbounded compactions in both link modes and timings, runs, unschedules, rollbacks of runs,
repairs, cleans with both policies, and ``kill -9`` before *any* storage change of a write, schedule, run, clean,
rollback, unschedule or repair (:mod:`tests.safety.crash_anywhere`) followed by the documented recovery.

The oracle starts from Spark's snapshot of the fixture (its gold data) and is a dict ``key -> row`` updated by every
committed write; compactions, cleans and services never change it. After every step:

* our snapshot and hudi-rs's (which lists files through the metadata table) equal the oracle;
* the metadata table's ``files`` partition lists exactly the committed data files, with their sizes;
* hudi-rs's read-optimized view equals ours;
* no file a live slice needs is missing, no visible symlink dangles.

``EVT_MDT_MODEL_EXAMPLES`` (default 3) and ``EVT_MDT_MODEL_STEPS`` (default 10) size the run.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from evt_toolkit.errors import PendingTableServiceError, ReadError, WriteError
from evt_toolkit.services.clean_planner import KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS
from evt_toolkit.storage.fs import TableStorage, relative_path
from evt_toolkit.table.fs_view import list_table_files
from evt_toolkit.table.metadata_table import metadata_table_support, read_files_partition
from evt_toolkit.table.table import Table
from evt_toolkit.table.timeline import COMPACTION, DELTA_COMMIT
from evt_toolkit.write.task import write_file_group
from tests.conftest import SKIP_NO_SHARED, fixture_table_path
from tests.normalize import assert_same_rows
from tests.safety.crash_anywhere import run_killed_at
from tests.services import (
    missing_live_files,
    recover_and_compact_fully,
    time_travel_unsettled,
    visible_dangling_symlinks,
)

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

EXAMPLES = int(os.environ.get("EVT_MDT_MODEL_EXAMPLES", "3"))
STEPS = int(os.environ.get("EVT_MDT_MODEL_STEPS", "10"))

#: Stock fixtures with a maintainable metadata table, one per table version and shape (partitioned or not, one or
#: two key fields, commit-time or event-time ordering). ``mor_v9_nonpartitioned_rollback`` holds one key in two
#: file groups (an insert written twice), which the SIMPLE index refuses to update.
FIXTURES = [
    "mor_v8_trips_8i3u1d",
    "mor_v9_txns_simple_meta",
    "mor_v9_txns_complex_meta",
    "mor_v9_txns_nonpart_meta",
    "mor_table_evo_add_col",
]
#: The string column each fixture's updates change.
VALUE_COLUMN = {"mor_table_evo_add_col": "val", "mor_v8_trips_8i3u1d": "rider"}


def _rs(path: str, *, ro: bool = False, options: dict[str, str] | None = None, as_of: str | None = None) -> pa.Table:
    b = hudi.HudiTableBuilder.from_base_uri(path)
    if options:
        b = b.with_storage_options(options)
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    opts = hudi.HudiReadOptions()
    if as_of is not None:
        opts = opts.with_as_of_timestamp(as_of)
    batches = b.build().read(opts)
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _committed_files(t: Table) -> dict[tuple[str, str], int]:
    """Every data file on storage whose instant completed (all slices): what the files partition must list."""
    t.refresh()
    listing = list_table_files(t.storage)
    out = {(posixpath.dirname(b.path), b.name): b.size for b in listing.base_files if t.timeline.is_visible(b.instant)}
    out.update({(p, lf.name): lf.size for p, lf in listing.log_files if t.timeline.is_visible(lf.instant)})
    return out


def _listed_files(t: Table) -> dict[tuple[str, str], int]:
    listing = read_files_partition(t.refresh())
    return {(p, name): size for p, files in listing.files.items() for name, size in files.items()}


def _failed_write(t: evt.HudiTable, batch: pa.Table) -> str:
    """A write through the SIMPLE index whose executor runs one task and dies; returns the failed instant."""

    def crash(spec: Any, tasks: list[Any]) -> Any:
        for i, (fg, up, de) in enumerate(tasks[:1]):
            write_file_group(spec, fg, up, de, task_partition_id=i)
        raise RuntimeError("executor lost")

    with pytest.raises(WriteError) as info:
        t.write(batch, executor=crash, options={"hoodie.index.type": "SIMPLE"})
    return str(info.value).split()[1]


class MdtLifecycle(RuleBasedStateMachine):
    #: Storage options of the S3 server the table lives on (``None``: a local copy).
    options: dict[str, str] | None = None
    #: The bucket of the S3 variant.
    bucket: str = ""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="evt-mdt-model-"))
        self.t: evt.HudiTable
        self.oracle: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.gone: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.undo: list[tuple[str, dict, dict]] = []
        self.failed: list[str] = []
        self.n = 0
        self.did: list[str] = []
        self.crashed = False

    @initialize(name=st.sampled_from(FIXTURES))
    def start(self, name: str) -> None:
        src = fixture_table_path(name)
        dst = self.root / name
        shutil.copytree(src, dst, symlinks=True)
        for p in [dst, *dst.rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | 0o200)
        t = evt.HudiTable.open(dst)
        field = t.config.ordering_field
        if field:
            props = dst / ".hoodie" / "hoodie.properties"
            props.write_text(props.read_text() + f"hoodie.payload.event.time.field={field}\n")
        self.t = evt.HudiTable.open(dst)
        if self.options:
            uri = f"s3://{self.bucket}/{self.root.name}/{name}"
            storage = TableStorage.from_uri(uri, self.options)
            storage.write_many({p.relative_to(dst).as_posix(): p.read_bytes() for p in dst.rglob("*") if p.is_file()})
            self.t = evt.HudiTable.open(uri, storage_options=self.options)
        assert metadata_table_support(self.t).maintainable, name
        for failed in [i.time for i in self.t.timeline.inflight_writes()]:
            self.t.rollback(failed)
        self.name = name
        self.keys = list(self.t.config.record_key_fields)
        self.ordering = self.t.config.ordering_field
        snap = _rs(self.t.path, options=self.options)
        self.columns = [c for c in snap.column_names if not c.startswith("_hoodie_")]
        self.schema = pa.schema([snap.schema.field(c) for c in self.columns])
        self.value = VALUE_COLUMN.get(name, "merchant_name")
        gold = fixture_table_path(name).parent / "gold_data"
        base = pq.read_table(gold).select(self.columns) if gold.is_dir() else snap.select(self.columns)
        for row in base.to_pylist():
            self.oracle[self._key(row)] = row

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        report = os.environ.get("EVT_MDT_MODEL_REPORT")
        if report:  # one line per sequence: the fixture and the steps that changed something
            with open(report, "a", encoding="utf-8") as out:
                out.write(f"{getattr(self, 'name', '-')} {' '.join(self.did)}\n")

    # -- helpers ---------------------------------------------------------------------------------------------------
    def _key(self, row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row[k] for k in self.keys)

    def _batch(self, picks: list[int], *, revive: bool = False) -> list[dict[str, Any]]:
        pool = sorted(self.gone if revive else self.oracle, key=repr)
        if not pool:
            return []
        src = self.gone if revive else self.oracle
        out = {}
        for p in picks:
            row = dict(src[pool[p % len(pool)]])
            self.n += 1
            row[self.value] = f"v{self.n}"
            if self.ordering:
                row[self.ordering] = (row[self.ordering] or 0) + 1
            out[self._key(row)] = row
        return list(out.values())

    def _table(self, rows: list[dict[str, Any]]) -> pa.Table:
        return pa.Table.from_pylist(rows, schema=self.schema)

    def _commit(self, instant: str, rows: list[dict[str, Any]], op: str) -> None:
        before = (dict(self.oracle), dict(self.gone))
        for row in rows:
            k = self._key(row)
            if op == "delete":
                self.oracle.pop(k, None)
                self.gone[k] = row
            else:
                self.oracle[k] = row
                self.gone.pop(k, None)
        self.undo.append((instant, *before))

    def _pending(self) -> list[str]:
        return [i.time for i in self.t.refresh().timeline.pending_compactions()]

    def _threshold(self, where: int) -> int | None:
        if not self.t.config.event_time_field or not self.oracle or where == 3:
            return None
        times = sorted(r[self.ordering] for r in self.oracle.values() if r[self.ordering] is not None)
        return times[min(where * len(times) // 3, len(times) - 1)] if times else None

    def _killed_at(self, n: int, path: str, action: str, *args: str) -> Any:
        return run_killed_at(n, path, action, *args, storage_options=self.options)

    def _link_mode(self, mode: str) -> str:
        return "copy" if self.options else mode  # object stores have no symlinks

    # -- rules: writes ---------------------------------------------------------------------------------------------
    @rule(
        picks=st.lists(st.integers(0, 50), min_size=1, max_size=3), op=st.sampled_from(["upsert", "delete", "revive"])
    )
    def write(self, picks: list[int], op: str) -> None:
        rows = self._batch(picks, revive=op == "revive")
        if not rows:
            return
        operation = "delete" if op == "delete" else "upsert"
        instant = self.t.write(self._table(rows), operation, options={"hoodie.index.type": "SIMPLE"})
        if instant:
            self._commit(instant, rows, operation)
            self.did.append(op)

    @rule(picks=st.lists(st.integers(0, 50), min_size=1, max_size=3), now=st.booleans())
    def fail_a_write(self, picks: list[int], now: bool) -> None:
        rows = self._batch(picks)
        if not rows:
            return
        failed = _failed_write(self.t, self._table(rows))
        self.did.append("failed-write" + ("+rollback" if now else ""))
        if now:
            self.t.rollback(failed)
        else:
            self.failed.append(failed)

    @precondition(lambda self: bool(self.failed))
    @rule()
    def roll_back_failed_writes(self) -> None:
        for f in self.failed:
            self.t.rollback(f)
            self.did.append("rollback-failed")
        self.failed = []

    @precondition(lambda self: bool(self.undo))
    @rule()
    def roll_back_the_last_write(self) -> None:
        last = self.undo[-1][0]
        tl = self.t.refresh().timeline
        if self.failed or any(i.time > last and i.action in (DELTA_COMMIT, COMPACTION, "commit") for i in tl.instants):
            return
        self.t.rollback(last)
        _, self.oracle, self.gone = self.undo.pop()
        self.did.append("rollback-last")

    # -- rules: compaction -----------------------------------------------------------------------------------------
    @rule(
        where=st.integers(0, 3),
        link_mode=st.sampled_from(["copy", "symlink"]),
        link_timing=st.sampled_from(["schedule", "execute"]),
    )
    def schedule(self, where: int, link_mode: str, link_timing: str) -> None:
        threshold = self._threshold(where)
        strategy = (
            UnBoundedCompactionStrategy()
            if threshold is None
            else EventTimeBasedCompactionStrategy(threshold=threshold)
        )
        with contextlib.suppress(PendingTableServiceError):
            link_mode = self._link_mode(link_mode)
            c = self.t.compaction.schedule(strategy, link_mode=link_mode, link_timing=link_timing)
            if c is not None:
                self.did.append(f"schedule({threshold is not None},{link_mode},{link_timing})")

    @rule(
        where=st.integers(0, 3),
        link_mode=st.sampled_from(["copy", "symlink"]),
        link_timing=st.sampled_from(["schedule", "execute"]),
    )
    def compact(self, where: int, link_mode: str, link_timing: str) -> None:
        """Schedule and run at once (the common case), so that cleans find old slices to delete."""
        if self._pending():
            return
        self.schedule(where, link_mode, link_timing)
        if self._pending():
            self.run()

    @precondition(lambda self: bool(self._pending()))
    @rule()
    def run(self) -> None:
        self.t.compaction.run(self._pending()[0])
        self.did.append("run")

    @precondition(lambda self: bool(self._pending()))
    @rule()
    def unschedule(self) -> None:
        r = self.t.compaction.unschedule(self._pending()[0], dry_run=False)
        self.did.append("unschedule" if r.deleted else "unschedule-refused")

    @precondition(lambda self: any(i.is_inflight for i in self.t.refresh().timeline.pending_compactions()))
    @rule()
    def roll_back_the_run(self) -> None:
        c = next(i.time for i in self.t.timeline.pending_compactions() if i.is_inflight)
        assert self.t.rollback(c).plan_requested_again
        self.did.append("rollback-run")

    @rule(policy=st.sampled_from([KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS]), retained=st.integers(1, 2))
    def clean(self, policy: str, retained: int) -> None:
        r = self.t.clean(policy, retained, dry_run=False)
        self.did.append(f"clean({len(r.deleted)})")

    @precondition(lambda self: self.crashed or bool(self._pending()))
    @rule()
    def repair(self) -> None:
        r = self.t.compaction.repair(dry_run=False, older_than_s=0)
        self.did.append("repair" if not r.clean else "repair-nothing")

    @rule()
    def recover_and_compact_fully(self) -> None:
        """The documented recovery (:func:`tests.services.recover_and_compact_fully`) always brings the table back to
        fully compacted; the read-optimized view is then the snapshot, ours and hudi-rs's."""
        recover_and_compact_fully(self.t, self.failed)
        self.failed = []
        self.did.append("recover-full")
        ro = self.t.refresh().read("read_optimized")
        assert_same_rows(ro, self.t.read(), self.columns, f"{self.name}: RO vs snapshot after a full compaction")
        assert_same_rows(_rs(self.t.path, ro=True, options=self.options), ro, self.columns, "RO: hudi-rs vs ours")

    # -- rules: crashes --------------------------------------------------------------------------------------------
    @rule(
        what=st.sampled_from(["write", "schedule", "run", "clean", "rollback", "unschedule", "repair"]),
        at=st.integers(1, 40),
        recover=st.booleans(),
        pick=st.integers(0, 50),
    )
    def crash(self, what: str, at: int, recover: bool, pick: int) -> None:
        path = self.t.path
        self.did.append(f"crash({what}@{at},{recover})")
        self.crashed = True
        if what == "write":
            rows = self._batch([pick, pick + 1])
            if not rows:
                return
            batch = self.root / "batch.parquet"
            pq.write_table(self._table(rows), batch)
            before = {i.time for i in self.t.refresh().timeline.instants}
            proc = self._killed_at(at, path, "write", str(batch), "upsert", "SIMPLE")
            assert proc.returncode in (0, -9), proc.stderr[-3000:]
            for inst in self.t.refresh().timeline.instants:
                if inst.time in before or inst.action != DELTA_COMMIT:
                    continue
                if inst.is_completed:
                    self._commit(inst.time, rows, "upsert")
                elif recover:
                    self.t.rollback(inst.time)
                else:
                    self.failed.append(inst.time)
            return
        if what == "schedule":
            threshold = self._threshold(pick % 4)
            proc = self._killed_at(
                at,
                path,
                "schedule",
                "" if threshold is None else str(threshold),
                self._link_mode(["copy", "symlink"][pick % 2]),
                ["schedule", "execute"][(pick // 2) % 2],
            )
            assert proc.returncode in (0, -9) or "PendingTableServiceError" in proc.stderr, proc.stderr[-3000:]
            if recover:
                self.t.compaction.repair(dry_run=False, older_than_s=0)
            return
        if what in ("run", "unschedule"):
            pending = self._pending()
            if not pending:
                return
            c = pending[0]
            proc = self._killed_at(at, path, what, c)
            assert proc.returncode in (0, -9), proc.stderr[-3000:]
            if recover and c in self._pending():
                if what == "run":
                    self.t.compaction.run(c)
                else:
                    self.t.compaction.unschedule(c, dry_run=False)
            return
        if what == "clean":
            policy = [KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS][pick % 2]
            proc = self._killed_at(at, path, "clean", policy, "1")
            assert proc.returncode in (0, -9), proc.stderr[-3000:]
            if recover:
                self.t.clean(policy, 1, dry_run=False)
            return
        if what == "repair":
            proc = self._killed_at(at, path, "repair")
            assert proc.returncode in (0, -9), proc.stderr[-3000:]
            if recover:
                self.t.compaction.repair(dry_run=False, older_than_s=0)
            return
        # rollback: of a failed write, or of the last write
        if self.failed:
            target = self.failed[0]
            proc = self._killed_at(at, path, "rollback", target)
            assert proc.returncode in (0, -9), proc.stderr[-3000:]
            present = target in {i.time for i in self.t.refresh().timeline.instants}
            if recover or not present:
                if present:
                    self.t.rollback(target)
                self.failed.remove(target)
            return
        if not self.undo:
            return
        last = self.undo[-1][0]
        tl = self.t.refresh().timeline
        if any(i.time > last and i.action in (DELTA_COMMIT, COMPACTION, "commit") for i in tl.instants):
            return
        proc = self._killed_at(at, path, "rollback", last)
        assert proc.returncode in (0, -9), proc.stderr[-3000:]
        tl = self.t.refresh().timeline
        done = not any(i.time == last and i.action == DELTA_COMMIT for i in tl.instants)
        if not done:
            # Killed half-way: the rollback is resumed (the write is no longer readable once it began).
            self.t.rollback(last)
        _, self.oracle, self.gone = self.undo.pop()

    # -- invariants ------------------------------------------------------------------------------------------------
    def _expected(self) -> pa.Table:
        return self._table(list(self.oracle.values()))

    @invariant()
    def snapshot_is_the_oracle(self) -> None:
        if not hasattr(self, "t"):
            return
        expected = self._expected()
        assert_same_rows(self.t.refresh().read(), expected, self.columns, f"{self.name}: our snapshot vs oracle")
        assert_same_rows(
            _rs(self.t.path, options=self.options), expected, self.columns, f"{self.name}: hudi-rs snapshot vs oracle"
        )

    @invariant()
    def metadata_table_lists_the_live_files(self) -> None:
        if not hasattr(self, "t"):
            return
        listed, live = _listed_files(self.t), _committed_files(self.t)
        # A clean killed after some deletes and not yet resumed: Hudi syncs a clean when it completes, so until
        # then the listing still names the files its plan deletes (none of them in a live slice).
        tl = self.t.refresh().timeline
        planned = {
            (posixpath.dirname(rel := relative_path(self.t.storage, f)), posixpath.basename(rel))
            for i in tl.pending()
            if i.action == "clean"
            for fs in tl.clean_plan(i).files.values()
            for f in fs
        }
        listed = {k: v for k, v in listed.items() if k in live or k not in planned}
        assert listed == live, (
            f"{self.name}: files partition vs storage: listed only {sorted(set(listed) - set(live))[:5]}, "
            f"missing {sorted(set(live) - set(listed))[:5]}, sizes "
            f"{[(k, listed[k], live[k]) for k in set(listed) & set(live) if listed[k] != live[k]][:3]}"
        )

    @invariant()
    def time_travel_is_history(self) -> None:
        """Time travel to one of our writes (ours and hudi-rs's, through the metadata table) is what was committed
        then — or a ``ReadError`` once a clean removed its files."""
        if not hasattr(self, "t") or not self.undo:
            return
        i = (self.n * 7919 + len(self.did)) % len(self.undo)
        instant = self.undo[i][0]
        then = self.undo[i + 1][1] if i + 1 < len(self.undo) else self.oracle
        expected = self._table(list(then.values()))
        try:
            got = self.t.read(as_of=instant)
        except ReadError as exc:
            assert "earliest instant still readable" in str(exc) or time_travel_unsettled(self.t, instant, exc), exc
            return
        assert_same_rows(got, expected, self.columns, f"{self.name}: time travel to {instant} vs what was committed")
        theirs = _rs(self.t.path, options=self.options, as_of=instant)
        assert_same_rows(theirs, expected, self.columns, f"{self.name}: hudi-rs time travel to {instant}")

    @invariant()
    def read_optimized_agrees(self) -> None:
        if not hasattr(self, "t"):
            return
        assert_same_rows(
            _rs(self.t.path, ro=True, options=self.options),
            self.t.read("read_optimized"),
            self.columns,
            "RO: hudi-rs vs ours",
        )

    @invariant()
    def nothing_needed_is_missing(self) -> None:
        if not hasattr(self, "t"):
            return
        if self.options:
            live = [
                f
                for s in self.t.refresh().view.latest_merged_file_slices()
                for f in ([s.base_file.path] if s.base_file else []) + [lf.path for lf in s.log_files]
            ]
            assert [f for f in live if not self.t.storage.exists(f)] == []
            return
        assert missing_live_files(self.t) == []
        assert visible_dangling_symlinks(self.t) == []


MdtLifecycle.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_mdt_lifecycle = SKIP_NO_SHARED(MdtLifecycle.TestCase)

S3_EXAMPLES = int(os.environ.get("EVT_MDT_MODEL_S3_EXAMPLES", "2"))


@SKIP_NO_SHARED
def test_mdt_lifecycle_on_s3(s3_server: Any) -> None:
    """The same lifecycles on the session's S3 server (copy links only: object stores have no symlinks)."""

    class OnS3(MdtLifecycle):
        options = s3_server.options
        bucket = s3_server.new_bucket("mdt-model")

    run_state_machine_as_test(
        OnS3,
        settings=settings(
            max_examples=S3_EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
