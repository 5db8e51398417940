"""Seeded random histories at the edges of the data, against an independent model of Hudi's answers and hudi-rs.

Where :mod:`tests.safety.test_merge_shapes` varies the merge (ties, deletes below and above, commit-time deletes,
ordering types) on one key per partition, these histories vary what the records carry and where they live:

* **partitions**: one record key in several partitions at once (Hudi keys a record by key *and* partition path),
  updated, deleted and compacted in each independently; partition values that are null (``__HIVE_DEFAULT_PARTITION__``),
  start with ``_`` or ``.``, hold spaces, ``=`` or non-ASCII letters; hive-style names on or off;
* **event times**: integer epoch milliseconds, integer epoch seconds, timestamps in milliseconds or microseconds (with
  a time zone), dates; values before 1970; null values, and logs whose event times are all null;
* **batches**: empty upserts and deletes, deletes of keys that never existed (dropped where the partition has no
  file group yet, as Hudi's bucket index drops them), soft deletes, a key deleted and written again in the next
  batch, duplicates within a batch;
* **services**: full and event-time partial compactions (copy or symlink links made at schedule or execute time,
  exact split), writes landing between schedule and run, cleans of both policies.

After every step: our snapshot equals the model (:mod:`tests.safety.model`, one model file group per partition);
the read-optimized view equals the model's base rows; a projection to two columns reads the same rows; hudi-rs
reads the same snapshot (v6: unless a compaction is pending) and RO view; time travel to every earlier write,
compaction and clean returns what the snapshot was after the last write at or before it, the read-optimized view as
of a write made while no compaction was pending returns what it was then, the incremental window between two writes
returns what it returned when the later one completed — each or a ``ReadError`` once a clean removed what it needs,
never another answer; and the RO freshness holds: restricted to events at or before
``ro_freshness().threshold_ms``, the RO view and the snapshot hold the same rows.

``EVT_SAFETY5_EXAMPLES`` (default 6) histories of ``EVT_SAFETY5_STEPS`` (default 14) steps run in CI; a long run is
e.g. ``EVT_SAFETY5_EXAMPLES=200 EVT_SAFETY5_STEPS=20`` (``EVT_SAFETY5_FIRST_SEED`` starts elsewhere).
``EVT_SAFETY5_SEED=<n>`` reruns one seed.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.errors import PendingTableServiceError, ReadError
from evt_toolkit.format.eventtime import to_epoch_ms
from tests.safety.model import Model, Rec
from tests.services import incremental_unsettled, time_travel_unsettled

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

EXAMPLES = int(os.environ.get("EVT_SAFETY5_EXAMPLES", "6"))
STEPS = int(os.environ.get("EVT_SAFETY5_STEPS", "14"))
FIRST = int(os.environ.get("EVT_SAFETY5_FIRST_SEED", "0"))
SEEDS = (
    [int(os.environ["EVT_SAFETY5_SEED"])]
    if os.environ.get("EVT_SAFETY5_SEED")
    else [FIRST + i for i in range(EXAMPLES)]
)

DEFAULT = "__HIVE_DEFAULT_PARTITION__"
VALUES = ["a", None, "_x", ".y", "a b", "ü=1"]
#: Event times in milliseconds the histories draw from (before and after 1970); thresholds fall between them.
EVENT_MS = [-86_400_000 * 3, -1_000, 0, 86_400_000, 86_400_000 * 2, 86_400_000 * 5]
EV_KINDS = ["long_ms", "int_s", "long_ns", "timestamp_ms", "timestamp_us_utc", "date"]
#: Ordering field types; the model compares the small integers the histories draw, each written as a value of the
#: type that keeps their order (negative numbers, times and days before 1970).
ORDERING_KINDS = ["long", "timestamp", "date"]


@pytest.fixture
def root() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="evt-edges-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


class _EdgeHistory:
    def __init__(self, root: Path, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        self.version = rng.choice([6, 8, 9])
        self.hive = rng.random() < 0.5
        self.values = [VALUES[0], *rng.sample(VALUES[1:], 2)]
        self.ev_kind = rng.choice(EV_KINDS)
        self.ordering_kind = rng.choice(ORDERING_KINDS)
        self.merge_mode = "commit_time" if rng.random() < 0.2 else "event_time"
        self.desc = (
            f"seed {seed}: v{self.version}, {self.merge_mode}, hive {self.hive}, partitions {self.values}, "
            f"event time {self.ev_kind}, ordering {self.ordering_kind}"
        )
        self.t = evt.HudiTable.create(
            root / "t",
            "e",
            "id",
            partition_by="p",
            ordering_field="ts",
            event_time_field="ev",
            buckets=1,
            merge_mode=self.merge_mode,
            hive_style_partitioning=self.hive,
            event_time_unit={"int_s": "s", "long_ns": "ns"}.get(self.ev_kind, "ms"),
            table_version=self.version,
        )
        self.model = Model(event_time=self.merge_mode == "event_time")
        self.ev_of: dict[float, int | None] = {}  # v (unique per row) -> its event time in ms
        self.writes: list[str] = []
        self.as_of: dict[str, list[tuple[Any, ...]]] = {}
        #: the incremental window (previous write, write] as read right after the write; a write that landed while a
        #: compaction was pending is left out (once it completes, that window's records meet its base file)
        self.windows: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        #: the read-optimized view as of a write that landed with no compaction pending
        self.ro_as_of: dict[str, list[tuple[Any, ...]]] = {}
        self.serial = 0
        self.log: list[str] = []

    # -- values ------------------------------------------------------------------------------------------------
    def _group(self, value: str | None) -> str:
        v = value or DEFAULT
        return f"p={v}" if self.hive else v

    def _ev_array(self, ms: list[int | None]) -> pa.Array:
        if self.ev_kind == "long_ms":
            return pa.array(ms, pa.int64())
        if self.ev_kind == "int_s":
            return pa.array([None if m is None else m // 1000 for m in ms], pa.int32())
        if self.ev_kind == "long_ns":
            return pa.array([None if m is None else m * 1_000_000 + 999_999 for m in ms], pa.int64())
        if self.ev_kind == "timestamp_ms":
            return pa.array(ms, pa.int64()).cast(pa.timestamp("ms"))
        if self.ev_kind == "timestamp_us_utc":
            return pa.array([None if m is None else m * 1000 for m in ms], pa.int64()).cast(pa.timestamp("us", "UTC"))
        return pa.array([None if m is None else m // 86_400_000 for m in ms], pa.int32()).cast(pa.date32())

    def _stored_ms(self, ms: int | None) -> int | None:
        """The event time the table sees for ``ms`` (seconds and days drop the rest)."""
        if ms is None:
            return None
        unit = {"int_s": "s", "long_ns": "ns"}.get(self.ev_kind, "ms")
        return to_epoch_ms(self._ev_array([ms]), unit)[0].as_py()  # type: ignore[arg-type]

    def _ordering(self, xs: list[int]) -> pa.Array:
        shifted = pa.array([x - 4 for x in xs], pa.int64())  # 1..9 -> -3..5: before 1970 for the times
        if self.ordering_kind == "timestamp":
            return pa.array([(x - 4) * 1000 + 1 for x in xs], pa.int64()).cast(pa.timestamp("ms"))
        if self.ordering_kind == "date":
            return shifted.cast(pa.int32()).cast(pa.date32())
        return shifted

    # -- writes ------------------------------------------------------------------------------------------------
    def upsert(self, items: list[tuple[int, str | None, int, int | None, bool]]) -> None:
        """``(id, partition value, ordering, event time ms, soft delete)`` rows, one deltacommit."""
        vs = []
        for _ in items:
            self.serial += 1
            vs.append(float(self.serial))
        batch = pa.table(
            {
                "id": pa.array([i for i, *_ in items], pa.int64()),
                "p": pa.array([p for _, p, *_ in items], pa.string()),
                "ts": self._ordering([o for _, _, o, _, _ in items]),
                "ev": self._ev_array([e for *_, e, _ in items]),
                "v": pa.array(vs, pa.float64()),
                "_hoodie_is_deleted": pa.array([d for *_, d in items], pa.bool_()),
            }
        )
        instant = self.t.write(batch)
        best: dict[tuple[str, str], Rec] = {}
        for (i, p, o, e, d), v in zip(items, vs, strict=True):
            self.ev_of[v] = self._stored_ms(e)
            rec = Rec(str(i), "data", o, {"id": i, "v": v, "_hoodie_is_deleted": d})
            k = (self._group(p), str(i))
            if k not in best or o >= best[k].ts:  # type: ignore[operator]
                best[k] = (
                    rec  # in-batch duplicates per (partition, key): the greatest ordering value, ties to the later
                )
        by_group: dict[str, list[Rec]] = {}
        for (g, _), rec in best.items():
            by_group.setdefault(g, []).append(rec)
        for g, recs in by_group.items():
            self.model.write(g, recs)
        self._wrote(instant, f"upsert {items}")

    def delete(self, items: list[tuple[int, str | None]], ordering: int | None) -> None:
        cols: dict[str, pa.Array] = {
            "id": pa.array([i for i, _ in items], pa.int64()),
            "p": pa.array([p for _, p in items], pa.string()),
        }
        if ordering is not None:
            cols["ts"] = self._ordering([ordering] * len(items))
        ev = None
        if self.rng.random() < 0.5:  # the deletes carry event times (recorded in the commit's write stats)
            ev = [None if self.rng.random() < 0.3 else self.rng.choice(EVENT_MS) for _ in items]
            cols["ev"] = self._ev_array(ev)
        instant = self.t.write(pa.table(cols), "delete")
        kind = "ct" if ordering is None else "del"
        by_group: dict[str, dict[str, Rec]] = {}
        for i, p in items:
            g = self._group(p)
            if g in self.model.groups:  # no file group in the partition: the bucket index drops the delete
                by_group.setdefault(g, {})[str(i)] = Rec(str(i), kind, ordering)
        for g, recs in by_group.items():
            self.model.write(g, list(recs.values()))
        if instant:
            self._wrote(instant, f"delete {items} ordering {ordering} event times {ev}")
        else:
            self.log.append(f"delete {items} ordering {ordering}: nothing written")

    def empty(self, operation: str) -> None:
        batch = pa.table(
            {
                "id": pa.array([], pa.int64()),
                "p": pa.array([], pa.string()),
                "ts": self._ordering([]),
                "ev": self._ev_array([]),
                "v": pa.array([], pa.float64()),
                "_hoodie_is_deleted": pa.array([], pa.bool_()),
            }
        )
        if operation == "delete":
            batch = batch.select(["id", "p"])
        instant = self.t.write(batch, operation)
        if instant:
            self._wrote(instant, f"empty {operation}")

    def _wrote(self, instant: str, what: str) -> None:
        self.log.append(f"{instant} {what}")
        if not self.t.refresh().timeline.pending_compactions():
            self.ro_as_of[instant] = self.model_ro()
            if self.writes:
                begin = self.writes[-1]
                self.windows[begin, instant] = self.rows(self.t.read("incremental", begin=begin, end=instant))
        self.writes.append(instant)
        self.as_of[instant] = self.expected()

    def random_write(self) -> None:
        rng = self.rng
        r = rng.random()
        if r < 0.06:
            self.empty(rng.choice(["upsert", "delete"]))
        elif r < 0.65 or not self.model.groups:
            items = []
            for _ in range(rng.randint(1, 5)):
                ev = None if rng.random() < 0.2 else rng.choice(EVENT_MS) + rng.choice([0, 1, 999])
                items.append(
                    (rng.randint(0, 3), rng.choice(self.values), rng.choice([1, 3, 5, 5, 7]), ev, rng.random() < 0.1)
                )
            if rng.random() < 0.2:  # every event time of the batch null: a log with no min event time
                items = [(i, p, o, None, d) for i, p, o, _, d in items]
            self.upsert(items)
        else:
            targets = [(rng.choice([0, 1, 2, 3, 90]), rng.choice(self.values)) for _ in range(rng.randint(1, 3))]
            ordering = None if rng.random() < 0.3 else rng.choice([1, 3, 5, 7, 9])
            self.delete(targets, ordering)

    # -- answers -----------------------------------------------------------------------------------------------
    def expected(self) -> list[tuple[Any, ...]]:
        out = []
        for g, group in self.model.groups.items():
            for k in set(group.base) | {r.key for u in group.units for r in u}:
                rec = self.model.read(g, k)
                if rec is not None and rec.row is not None:
                    out.append((g, int(k), rec.row["v"]))
        return sorted(out)

    def model_ro(self) -> list[tuple[Any, ...]]:
        return sorted(
            (g, int(k), r.row["v"])
            for g, group in self.model.groups.items()
            for k, r in group.base.items()
            if r.live and r.row is not None
        )

    @staticmethod
    def rows(t: pa.Table) -> list[tuple[Any, ...]]:
        if t.num_rows == 0:
            return []
        cols = ["_hoodie_partition_path", "id", "v"]
        return sorted(tuple(r[c] for c in cols) for r in t.select(cols).to_pylist())

    def rs(self, *, ro: bool = False) -> list[tuple[Any, ...]]:
        b = hudi.HudiTableBuilder.from_base_uri(self.t.path)
        if ro:
            b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
        batches = b.build().read()
        return self.rows(pa.Table.from_batches(batches)) if batches else []

    def check(self) -> None:
        t = self.t.refresh()
        want = self.expected()
        snap = self.rows(t.read())
        assert snap == want, f"{self.desc}: snapshot vs the model\n" + "\n".join(self.log)
        # A projection without the ordering, event-time and partition fields merges as the full read does.
        for query in ("snapshot", "read_optimized") if self.writes else ():
            part = t.read(query, columns=["id", "v"])
            assert part.column_names[-2:] == ["id", "v"]
            whole = snap if query == "snapshot" else self.rows(t.read(query))
            assert sorted((r["id"], r["v"]) for r in part.to_pylist()) == sorted((i, v) for _, i, v in whole), (
                f"{self.desc}: {query} of columns id, v\n" + "\n".join(self.log)
            )
        ro = self.rows(t.read("read_optimized"))
        assert ro == self.model_ro(), f"{self.desc}: RO vs the model's base rows\n" + "\n".join(self.log)
        if self.version != 6 or not t.timeline.pending_compactions():  # hudi-rs drops v6 logs of pending plans
            assert self.rs() == want, f"{self.desc}: hudi-rs snapshot\n" + "\n".join(self.log)
        assert self.rs(ro=True) == ro, f"{self.desc}: hudi-rs RO\n" + "\n".join(self.log)
        for w, then in self.as_of.items():
            try:
                got = self.rows(t.read(as_of=w))
            except ReadError as exc:
                assert "earliest instant still readable" in str(exc) or time_travel_unsettled(t, w, exc), exc
                continue
            assert got == then, f"{self.desc}: time travel to {w}\n" + "\n".join(self.log)
        # Time travel to a compaction's or a clean's instant reads what the last write before it left.
        for i in t.timeline.instants:
            if not i.is_completed or i.time in self.as_of:
                continue
            earlier = [w for w in self.writes if w < i.time]
            then = self.as_of[earlier[-1]] if earlier else []
            try:
                got = self.rows(t.read(as_of=i.time))
            except ReadError as exc:
                assert "earliest instant still readable" in str(exc) or time_travel_unsettled(t, i.time, exc), exc
                continue
            assert got == then, f"{self.desc}: time travel to {i.action} {i.time}\n" + "\n".join(self.log)
        for w, then in self.ro_as_of.items():
            try:
                got = self.rows(t.read("read_optimized", as_of=w))
            except ReadError as exc:
                assert "earliest instant still readable" in str(exc) or time_travel_unsettled(t, w, exc), exc
                continue
            assert got == then, f"{self.desc}: read-optimized as of {w}\n" + "\n".join(self.log)
        for (b, e), then in self.windows.items():
            try:
                got = self.rows(t.read("incremental", begin=b, end=e))
            except ReadError as exc:
                assert "earliest instant still readable" in str(exc) or incremental_unsettled(t, b, exc), exc
                continue
            assert got == then, f"{self.desc}: incremental window ({b}, {e}]\n" + "\n".join(self.log)
        # A window bounded by any two instants (compactions and cleans too) holds each record once, committed by a
        # write it admits: on layout 1 requested in it, on layout 2 completed in it.
        times = [i.time for i in t.timeline.instants if i.is_completed]
        for b, e in itertools.pairwise(times):
            try:
                window = t.read("incremental", begin=b, end=e, columns=["_hoodie_partition_path", "id"])
                committed = set(t.read("incremental", begin=b, end=e)["_hoodie_commit_time"].to_pylist())
            except ReadError as exc:
                assert "earliest instant still readable" in str(exc) or incremental_unsettled(t, b, exc), exc
                continue
            keys = list(zip(window["_hoodie_partition_path"].to_pylist(), window["id"].to_pylist(), strict=True))
            assert len(keys) == len(set(keys)), f"{self.desc}: a record twice in ({b}, {e}]\n" + "\n".join(self.log)
            if t.config.timeline_layout >= 2:
                admitted = {
                    i.time
                    for i in t.timeline.completed_commits()
                    if i.completion_time is not None and b < i.completion_time <= e
                }
            else:
                admitted = {w for w in self.writes if b < w <= e}
            assert committed <= admitted, (
                f"{self.desc}: ({b}, {e}] returned commits {sorted(committed - admitted)}\n" + "\n".join(self.log)
            )
        fresh = t.ro_freshness()
        if fresh.threshold_ms is not None:
            cut = fresh.threshold_ms

            def upto(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
                return [r for r in rows if (e := self.ev_of.get(r[2])) is not None and e <= cut]

            assert upto(ro) == upto(snap), (
                f"{self.desc}: RO and snapshot differ on events <= the freshness {cut} ({fresh})\n"
                + "\n".join(self.log)
            )

    # -- services ----------------------------------------------------------------------------------------------
    def compact(self) -> None:
        rng = self.rng
        full = rng.random() < 0.3
        threshold = rng.choice(EVENT_MS) + rng.choice([0, 500])
        link_mode, link_timing = rng.choice(["copy", "symlink"]), rng.choice(["schedule", "execute"])
        exact = not full and rng.random() < 0.3
        strategy = UnBoundedCompactionStrategy() if full else EventTimeBasedCompactionStrategy(threshold=threshold)
        shape = f"{'full' if full else f'T={threshold}'} {link_mode}/{link_timing}{' exact' if exact else ''}"
        try:
            c = self.t.compaction.schedule(strategy, link_mode=link_mode, link_timing=link_timing, exact_split=exact)
        except PendingTableServiceError:
            return
        if c is None:
            self.log.append(f"compaction {shape}: nothing to compact")
            return
        self.log.append(f"compaction {c.instant} {shape} scheduled")
        for _ in range(rng.choice([0, 0, 1])):
            self.random_write()
        before = self.rows(self.t.refresh().read())
        self.t.compaction.run(c)
        self.log.append(f"compaction {c.instant} ran")
        assert self.rows(self.t.refresh().read()) == before, f"{self.desc}: the compaction changed the snapshot"
        ro = self.t.read("read_optimized", columns=["id", "v", "_hoodie_partition_path"]).to_pylist()
        for op in c.plan.operations:
            g = op.partition_path
            seen = {str(r["id"]): {"id": r["id"], "v": r["v"]} for r in ro if r["_hoodie_partition_path"] == g}
            group = self.model.groups.get(g)
            keys = set(seen) | (set(group.base) | {r.key for u in group.units for r in u} if group else set())
            problems, _ = self.model.compact(g, len(op.delta_files), {k: seen.get(k) for k in keys})
            assert not problems, f"{self.desc}: {problems}\n" + "\n".join(self.log)

    def clean(self) -> None:
        policy = self.rng.choice(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"])
        retained = self.rng.choice([1, 2])
        try:
            r = self.t.clean(policy, retained=retained, dry_run=False)
        except PendingTableServiceError:
            return
        self.log.append(f"clean {policy} {retained}: {len(r.files)} files")


@pytest.mark.parametrize("seed", SEEDS)
def test_edge_histories_keep_their_answers(root: Path, seed: int) -> None:
    h = _EdgeHistory(root, seed)
    for _ in range(STEPS):
        r = h.rng.random()
        if h.writes and r < 0.25:
            h.compact()
        elif h.writes and r < 0.35:
            h.clean()
        else:
            h.random_write()
        h.check()
