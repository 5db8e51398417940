"""Merge semantics through every compaction shape, against Hudi 1.x's record merger and hudi-rs.

Hudi 1.x merges a key's log records by folding them in replay order (``BufferedRecordMergerFactory``'s
``EventTimeRecordMerger``, which hudi-rs mirrors): a commit-time delete (no ordering value, or SQL ``DELETE``'s
``IntWrapper(0)``) always wins; a delete *with* an ordering value that arrives on a commit-time delete is dropped
(``deltaMergeDeleteRecord``: ``existingRecord.isCommitTimeOrderingDelete()`` keeps the existing one); a data record
arriving on a commit-time delete wins; otherwise the newer record wins when its ordering value is ``>=``. A table
that was never compacted holds every write as log records, so its answer is that fold over the whole history — and
a compaction must not change any answer.

:func:`test_random_histories_keep_their_answers` runs seeded random histories built to hit the edge cases: few keys
and few distinct ordering values (ties across writes and within one write), keys written twice in one batch, soft
deletes, deletes whose ordering value is lower, equal or higher than the live record's, commit-time deletes, deletes
of keys only in logs, ordering fields of type long, int, string and timestamp, event-time and commit-time ordering;
compactions of every shape (full, event-time partial with copy or symlink links made at schedule or at execute time,
exact split) with writes landing between schedule and run, run with the tasks side by side or one at a time, with a
memory budget forcing the merge to spill, sometimes unscheduled instead. After every step our snapshot equals the
model of Hudi's answers (:mod:`tests.safety.model`, which folds as above), hudi-rs's snapshot and read-optimized
view equal ours, and time travel to every earlier write still returns what the snapshot was then; a compaction
leaves the snapshot, every time travel and every incremental window between writes that ended before it was
scheduled as they were. (A window ending after the compaction was requested holds writes that landed in its new
slice: once it completes, their records meet its base file where before they met only the window's log blocks —
Hudi's incremental merge skips log blocks outside the window, not base rows — so a record that lost to an older
version can drop out of such a window.)

:func:`test_spark_compaction_equals_the_local_one` runs one adversarial plan on Spark and here: the same outputs.

``EVT_SAFETY3_EXAMPLES`` (default 8) histories of ``EVT_SAFETY3_STEPS`` (default 14) steps run in CI; the long run is
e.g. ``EVT_SAFETY3_EXAMPLES=200 EVT_SAFETY3_STEPS=16``. A failure names its seed: ``EVT_SAFETY3_SEED=<n>`` reruns it.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import evt_toolkit as evt
import evt_toolkit.compaction.executor as executor
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.compaction.bounded_merge import MEMORY_MAX_SIZE_KEY
from evt_toolkit.errors import PendingTableServiceError
from evt_toolkit.table.timeline import COMPACTION
from tests.safety.model import Model, Rec

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

BASE = 1_700_000_000_000
EXAMPLES = int(os.environ.get("EVT_SAFETY3_EXAMPLES", "8"))
STEPS = int(os.environ.get("EVT_SAFETY3_STEPS", "14"))
SEEDS = [int(os.environ["EVT_SAFETY3_SEED"])] if os.environ.get("EVT_SAFETY3_SEED") else list(range(EXAMPLES))


def _rs(path: str, *, ro: bool = False) -> list[tuple[Any, ...]]:
    b = hudi.HudiTableBuilder.from_base_uri(path)
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    batches = b.build().read()
    return _rows(pa.Table.from_batches(batches)) if batches else []


def _rows(t: pa.Table, cols: tuple[str, ...] = ("id", "ts", "v")) -> list[tuple[Any, ...]]:
    if t.num_rows == 0:
        return []
    return sorted(tuple(r[c] for c in cols) for r in t.select(list(cols)).to_pylist())


def _upserts(ids: list[int], ts: list[Any], ev: int = 100, deleted: list[bool] | None = None) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": pd.array(ids, dtype="int64"),
            "region": [f"r{i % 2}" for i in ids],
            "ts": pd.array(ts, dtype="Int64"),
            "ev": pd.array([BASE + ev] * len(ids), dtype="int64"),
            "v": [float(i * 100 + (t or 0)) for i, t in zip(ids, ts, strict=True)],
            "_hoodie_is_deleted": deleted if deleted is not None else [False] * len(ids),
        }
    )


def _deletes(ids: list[int], ts: int | None = None) -> pd.DataFrame:
    df = pd.DataFrame({"id": pd.array(ids, dtype="int64"), "region": [f"r{i % 2}" for i in ids]})
    if ts is not None:
        df["ts"] = pd.array([ts] * len(ids), dtype="int64")
    return df


def _table(root: Path, version: int, merge_mode: str = "event_time") -> evt.HudiTable:
    return evt.HudiTable.create(
        root / "t",
        "m",
        "id",
        partition_by="region",
        ordering_field="ts",
        event_time_field="ev",
        buckets=1,
        merge_mode=merge_mode,
        table_version=version,
    )


@pytest.fixture
def root() -> Any:
    d = Path(tempfile.mkdtemp(prefix="evt-shapes-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("compact_after", [None, 2, 3])
def test_a_delete_arriving_on_a_commit_time_delete_is_dropped(
    root: Path, version: int, compact_after: int | None
) -> None:
    """Key 1: written (ts 5), deleted without an ordering value, deleted again with ts 9, written with ts 7. Java
    drops the ts-9 delete on the commit-time delete, so the ts-7 write is the answer (hudi-rs agrees); key 2 has no
    later write and stays deleted. A full compaction that folds the first three writes leaves the commit-time delete
    winning; one that folds only the first two takes the commit-time delete into the base and carries it, so that the
    ts-9 delete written next is still dropped on it and the ts-7 write still wins (Java's compactor drops it, after
    which the ts-9 delete would count). Each compaction leaves the snapshot as it was, and every later answer."""
    t = _table(root, version)
    writes = [
        lambda: t.write(_upserts([1, 2, 3], [5, 5, 5])),
        lambda: t.write(_deletes([1, 2]), "delete"),
        lambda: t.write(_deletes([1, 2], 9), "delete"),
        lambda: t.write(_upserts([1], [7])),
    ]
    for i, w in enumerate(writes, 1):
        w()
        if i == compact_after:
            before = _rows(t.refresh().read())
            c = t.compaction.schedule(UnBoundedCompactionStrategy())
            assert c is not None
            t.compaction.run(c)
            assert _rows(t.refresh().read()) == before, "the compaction changed the snapshot"
    expected = [(1, 7, 107.0), (3, 5, 305.0)]
    assert _rs(t.path) == expected
    assert _rows(t.refresh().read()) == expected


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
def test_a_partial_compaction_carries_a_commit_time_delete_a_later_delete_meets(
    root: Path, version: int, link_mode: str
) -> None:
    """Key 1 lives in logs only: written (ts 5), deleted without an ordering value; later logs (event time past the
    threshold) delete it with ts 9 and write it with ts 7. The snapshot holds the ts-7 row (the ts-9 delete is
    dropped on the commit-time delete). A partial compaction of the first two logs must carry the commit-time delete
    in front of the leftovers, or the ts-9 delete wins and the key is gone."""
    t = _table(root, version)
    t.write(_upserts([1, 3], [5, 5], ev=100))
    ct = _deletes([1])
    ct["ev"] = pd.array([BASE + 100], dtype="int64")
    t.write(ct, "delete")
    d = _deletes([1], 9)
    d["ev"] = pd.array([BASE + 900], dtype="int64")
    t.write(d, "delete")
    t.write(_upserts([1], [7], ev=900))
    expected = [(1, 7, 107.0), (3, 5, 305.0)]
    assert _rows(t.refresh().read()) == expected
    assert _rs(t.path) == expected
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 500), link_mode=link_mode)
    assert c is not None
    assert [len(op.delta_files) for op in c.plan.operations] == [2], "the plan compacts the first two logs"
    t.compaction.run(c)
    assert _rows(t.refresh().read()) == expected
    assert _rs(t.path) == expected
    assert _rows(t.read("read_optimized")) == [(3, 5, 305.0)]


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("operation", ["upsert", "insert"])
def test_a_null_ordering_value_is_refused(root: Path, version: int, operation: str) -> None:
    """A record whose ordering value is null has no place in event-time order: our log merge ranked it below every
    value while the merge with a base row let it win, so a compaction that moved the older record into the base file
    changed the answer (and hudi-rs read it another way). Hudi's writers refuse it (``HoodieAvroUtils
    .getNestedFieldVal``: "The value of ts can not be null"); so must ours, naming the field and the table, and
    leaving the table as it was."""
    t = _table(root, version)
    t.write(_upserts([1, 2], [5, 5]))
    instants = [i.time for i in t.refresh().timeline.instants]
    with pytest.raises(evt.WriteError, match=r"ordering.*'ts'.*null") as err:
        t.write(_upserts([1, 3], [None, 4]), operation)
    assert str(t.path) in str(err.value)
    assert [i.time for i in t.refresh().timeline.instants] == instants
    assert _rows(t.read()) == [(1, 5, 105.0), (2, 5, 205.0)]


@pytest.mark.parametrize("version", [6, 9])
def test_a_delete_whose_ordering_value_has_another_type_is_refused(root: Path, version: int) -> None:
    """A delete batch whose ordering column has another type than the table's ordering field (here int64 values on a
    string field) wrote ``LongWrapper`` ordering values: Hudi compares a delete's ordering value only with one of the
    same class (``deltaMergeDeleteRecord``: ``isSameClass``) and lets the delete win otherwise — hudi-rs too — while
    our reader cast it and kept the record. The write is refused, naming the column, as an upsert of the wrong type
    is, and the table is left as it was."""
    t = evt.HudiTable.create(
        root / "t",
        "m",
        "id",
        partition_by="region",
        ordering_field="ts",
        buckets=1,
        merge_mode="event_time",
        table_version=version,
    )
    up = pd.DataFrame(
        {"id": pd.array([1, 2], dtype="int64"), "region": ["r1", "r0"], "ts": ["s5", "s5"], "v": [1.0, 2.0]}
    )
    t.write(up)
    instants = [i.time for i in t.refresh().timeline.instants]
    bad = _deletes([1, 2], 3)
    with pytest.raises(evt.SchemaMismatchError, match="'ts'"):
        t.write(bad, "delete")
    assert [i.time for i in t.refresh().timeline.instants] == instants
    assert _rows(t.read()) == _rs(t.path) == [(1, "s5", 1.0), (2, "s5", 2.0)]
    t.write(pd.DataFrame({"id": pd.array([1], dtype="int64"), "region": ["r1"], "ts": ["s6"]}), "delete")
    assert _rows(t.refresh().read()) == _rs(t.path) == [(2, "s5", 2.0)]


# -- random histories ------------------------------------------------------------------------------------------------


class _History:
    """One table, the model of its answers, and the answers every query gave so far."""

    def __init__(self, root: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        self.version = rng.choice([6, 8, 9])
        self.kind = rng.choice(["long", "int", "string", "timestamp"])
        self.merge_mode = "commit_time" if rng.random() < 0.25 else "event_time"
        self.desc = f"seed {seed}: v{self.version}, {self.merge_mode}, ordering {self.kind}"
        self.t = evt.HudiTable.create(
            root / "t",
            "h",
            "id",
            partition_by="region",
            ordering_field="ts",
            event_time_field="ev",
            buckets=1,
            merge_mode=self.merge_mode,
            table_version=self.version,
        )
        if rng.random() < 0.4:  # every compaction task spills its key state
            props = root / "t" / ".hoodie" / "hoodie.properties"
            props.write_text(props.read_text() + f"{MEMORY_MAX_SIZE_KEY}=1\n")
            self.desc += ", spilling"
        self.model = Model(event_time=self.merge_mode == "event_time")
        self.writes: list[str] = []
        self.as_of: dict[str, list[tuple[Any, ...]]] = {}
        self.serial = 0
        self.log: list[str] = []

    def _ts(self, x: int) -> Any:
        """The ordering value written for ``x`` (the model compares ``x``: every mapping keeps its order)."""
        if self.kind == "string":
            return f"t{x:03d}"
        if self.kind == "timestamp":
            return pd.Timestamp(BASE + x * 1000, unit="ms")
        return x

    def _ts_array(self, values: list[Any]) -> Any:
        if self.kind == "string":
            return pd.array(values, dtype="string")
        if self.kind == "timestamp":
            return pd.array(values, dtype="datetime64[us]")
        return pd.array(values, dtype="int32" if self.kind == "int" else "int64")

    def upsert(self, items: list[tuple[int, int, int, bool]]) -> None:
        """``(id, ordering, event time, soft delete)`` rows, one deltacommit."""
        vs = []
        for _ in items:
            self.serial += 1
            vs.append(float(self.serial))
        df = pd.DataFrame(
            {
                "id": pd.array([i for i, *_ in items], dtype="int64"),
                "region": [f"r{i % 2}" for i, *_ in items],
                "ts": self._ts_array([self._ts(o) for _, o, _, _ in items]),
                "ev": pd.array([BASE + e for _, _, e, _ in items], dtype="int64"),
                "v": vs,
                "_hoodie_is_deleted": [d for *_, d in items],
            }
        )
        instant = self.t.write(df)
        best: dict[str, Rec] = {}
        for (i, o, _, d), v in zip(items, vs, strict=True):
            rec = Rec(str(i), "data", o, {"id": i, "v": v, "_hoodie_is_deleted": d})
            if str(i) not in best or rec.ts >= best[str(i)].ts:  # type: ignore[operator]
                best[str(i)] = rec  # in-batch duplicates: the greatest ordering value, ties to the later row
        self._model_write(list(best.values()))
        self._wrote(instant, f"upsert {items}")

    def delete(self, ids: list[int], ordering: int | None, ev: int) -> None:
        df = _deletes(ids)
        if ordering is not None:
            df["ts"] = self._ts_array([self._ts(ordering)] * len(ids))
        df["ev"] = pd.array([BASE + ev] * len(ids), dtype="int64")
        instant = self.t.write(df, "delete")
        kind = "ct" if ordering is None else "del"
        recs = [Rec(str(i), kind, ordering) for i in ids]
        self._model_write(recs)
        self._wrote(instant, f"delete {ids} ordering {ordering} ev {ev}")

    def _model_write(self, recs: list[Rec]) -> None:
        by_group: dict[str, list[Rec]] = {}
        for r in recs:
            by_group.setdefault(f"r{int(r.key) % 2}", []).append(r)
        for g, group_recs in by_group.items():
            self.model.write(g, group_recs)

    def _wrote(self, instant: str, what: str) -> None:
        self.log.append(what)
        self.writes.append(instant)
        self.as_of[instant] = self.expected()

    def expected(self) -> list[tuple[Any, ...]]:
        return sorted((int(r["id"]), r["v"]) for r in self.model.snapshot().values())

    def answers(self) -> dict[Any, Any]:
        """Snapshot, time travel to every write, incremental window between consecutive writes."""
        t = self.t.refresh()
        out: dict[Any, Any] = {"snapshot": _rows(t.read(), ("id", "v"))}
        for w in self.writes:
            out["as of", w] = _rows(t.read(as_of=w), ("id", "v"))
        for b, e in zip(self.writes, self.writes[1:], strict=False):
            out["incremental", b, e] = _rows(t.read("incremental", begin=b, end=e), ("id", "v", "_hoodie_commit_time"))
        return out

    def compact(self) -> None:
        rng = self.rng
        full = rng.random() < 0.3
        threshold = rng.randint(0, 1000)
        link_mode, link_timing = rng.choice(["copy", "symlink"]), rng.choice(["schedule", "execute"])
        exact = not full and rng.random() < 0.3
        strategy = (
            UnBoundedCompactionStrategy() if full else EventTimeBasedCompactionStrategy(threshold=BASE + threshold)
        )
        try:
            c = self.t.compaction.schedule(strategy, link_mode=link_mode, link_timing=link_timing, exact_split=exact)
        except PendingTableServiceError:
            return
        shape = f"{'full' if full else f'T={threshold}'} {link_mode}/{link_timing}{' exact' if exact else ''}"
        if c is None:
            self.log.append(f"compaction {shape}: nothing to compact")
            return
        for _ in range(rng.choice([0, 0, 1, 2])):  # writes landing between schedule and run
            self.random_write()
        before = self.answers()
        if rng.random() < 0.15:
            report = self.t.compaction.unschedule(c.instant, dry_run=False)
            self.log.append(f"compaction {shape} unscheduled ({report.refused_reason})")
            assert self.answers() == before, f"{self.desc}: unschedule changed an answer\n{self.log}"
            return
        one_slot = rng.random() < 0.5
        plan = self.t.timeline.compaction_plan(self.t.timeline.instant(c.instant, COMPACTION))
        if one_slot:
            saved = executor.local_task_slots
            executor.local_task_slots = lambda tasks: 1  # type: ignore[assignment]
            try:
                self.t.compaction.run(c)
            finally:
                executor.local_task_slots = saved  # type: ignore[assignment]
        else:
            self.t.compaction.run(c)
        self.log.append(f"compaction {shape}{' one task at a time' if one_slot else ''}")
        after = self.answers()
        # A window ending after C was requested holds writes that landed in C's new slice: once C completes, their
        # records meet C's base file, where before they met only the admitted log blocks (Hudi's incremental merge
        # skips blocks outside the window but not base rows), so such a window may legitimately change.
        changed = [k for k in before if before[k] != after.get(k) and not (k[0] == "incremental" and k[2] > c.instant)]
        assert not changed, (
            f"{self.desc}: the compaction changed {changed[:3]}: {[(before[k], after.get(k)) for k in changed[:3]]}"
            f"\n{self.log}"
        )
        ro = self.t.read("read_optimized", columns=["id", "v", "_hoodie_partition_path"]).to_pylist()
        for op in plan.operations:
            g = op.partition_path.rsplit("=", 1)[-1]
            seen = {
                str(r["id"]): {"id": r["id"], "v": r["v"]}
                for r in ro
                if r["_hoodie_partition_path"] == op.partition_path
            }
            group = self.model.groups.get(g)
            keys = set(seen) | (set(group.base) | {r.key for u in group.units for r in u} if group else set())
            problems, _ = self.model.compact(g, len(op.delta_files), {k: seen.get(k) for k in keys})
            assert not problems, f"{self.desc}: {problems}\n{self.log}"

    def random_write(self) -> None:
        rng = self.rng
        known = sorted({int(r.key) for g in self.model.groups.values() for u in g.units for r in u if r.kind == "data"})
        known = sorted(set(known) | {int(k) for g in self.model.groups.values() for k in g.base})
        if rng.random() < 0.6 or not known:
            items = [
                (
                    rng.randint(0, 5),
                    rng.choice([1, 3, 5, 5, 7]),
                    rng.randint(0, 1000),
                    bool(known) and rng.random() < 0.15,
                )
                for _ in range(rng.randint(1, 5))
            ]
            self.upsert(items)
        else:
            ids = sorted({rng.choice(known) for _ in range(rng.randint(1, 3))})
            ordering = None if rng.random() < 0.35 else rng.choice([1, 3, 5, 7, 9])
            self.delete(ids, ordering, rng.randint(0, 1000))

    def check(self) -> None:
        t = self.t.refresh()
        want = self.expected()
        assert _rows(t.read(), ("id", "v")) == want, f"{self.desc}: snapshot vs the model\n{self.log}"
        ro = _rows(t.read("read_optimized"), ("id", "v"))
        model_ro = sorted((int(r["id"]), r["v"]) for r in self.model.ro().values())
        assert ro == model_ro, f"{self.desc}: read-optimized view vs the model's base rows\n{self.log}"
        if self.version != 6 or not t.timeline.pending_compactions():  # hudi-rs drops v6 logs of pending plans
            assert sorted((r[0], r[2]) for r in _rs(t.path)) == want, f"{self.desc}: hudi-rs snapshot\n{self.log}"
        assert sorted((r[0], r[2]) for r in _rs(t.path, ro=True)) == ro, f"{self.desc}: hudi-rs RO\n{self.log}"
        for w, rows_then in self.as_of.items():
            assert _rows(t.read(as_of=w), ("id", "v")) == rows_then, f"{self.desc}: time travel to {w}\n{self.log}"


@pytest.mark.parametrize("seed", SEEDS)
def test_random_histories_keep_their_answers(root: Path, seed: int) -> None:
    h = _History(root, seed)
    for _ in range(STEPS):
        if h.writes and h.rng.random() < 0.3:
            h.compact()
        else:
            h.random_write()
        h.check()


def _adversarial(t: evt.HudiTable) -> None:
    """Every edge the merge has, in both partitions: ties, in-batch duplicates, soft deletes, deletes below, at and
    above the live record, commit-time deletes followed by deletes and by lower records, keys only in logs."""
    t.write(_upserts([0, 1, 2, 3, 4, 5, 6, 7], [5, 5, 5, 5, 5, 5, 5, 5], ev=100))
    t.write(_upserts([0, 0, 1, 1], [5, 7, 5, 5], ev=150))  # a tie across writes, a duplicate in one write
    t.write(_deletes([2], 3), "delete")  # below the live record: loses
    t.write(_deletes([3], 5), "delete")  # equal: wins
    t.write(_deletes([4, 5]), "delete")  # commit-time
    t.write(_deletes([4], 9), "delete")  # arrives on the commit-time delete: dropped
    t.write(_upserts([5, 6], [1, 6], ev=200, deleted=[False, True]))  # lower after a commit-time delete; soft delete
    t.write(_upserts([4, 3, 8], [2, 4, 1], ev=800))  # after the dropped delete; lower than a tombstone; new key
    t.write(_upserts([7, 9], [1, 1], ev=900))  # lower than live; new key


def test_spark_compaction_equals_the_local_one(root: Path, spark: Any) -> None:
    """The plan run on Spark writes the same base files and carry-over records as the one run here, and both
    tables read as before, ours and hudi-rs's."""
    from tests.compaction.test_spill import _outputs

    src = _table(root / "src", 9)
    _adversarial(src)
    before = _rows(src.refresh().read())
    c = src.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=BASE + 500))
    assert c is not None
    outputs = {}
    for name in ("local", "spark"):
        shutil.copytree(root / "src" / "t", root / name, symlinks=True)
        t = evt.HudiTable.open(root / name)
        t.compaction.run(c.instant, spark=spark if name == "spark" else None)
        assert _rows(t.refresh().read()) == before, f"{name}: the compaction changed the snapshot"
        assert _rs(str(t.path)) == before, f"{name}: hudi-rs after the compaction"
        outputs[name] = _outputs(t, c.instant)
    (lb, lc), (sb, sc) = outputs["local"], outputs["spark"]
    assert sorted(lb) == sorted(sb) and lb
    for name in lb:
        assert lb[name].drop_columns(["_hoodie_file_name"]).equals(sb[name].drop_columns(["_hoodie_file_name"])), name
    assert lc == sc, "the same carry-over records"


@pytest.mark.parametrize("version", [6, 9])
def test_an_ordered_delete_beside_a_commit_time_delete_on_a_timestamp_ordering_field(root: Path, version: int) -> None:
    """On a timestamp ordering field, a delete below the live record (it loses) and, in a later log, a commit-time
    delete of another key: the two delete blocks' ordering values have different types (timestamps, the ``IntWrapper
    (0)`` sentinel), and making them comparable as strings failed to parse the timestamps back, which turned every
    delete of the slice into a commit-time delete — the losing delete removed its key, and a compaction made that
    permanent (hudi-rs keeps the key)."""

    def stamp(xs: list[int]) -> Any:
        return pd.array([pd.Timestamp(BASE + x * 1000, unit="ms") for x in xs], dtype="datetime64[us]")

    t = _table(root, version)
    t.write(
        pd.DataFrame(
            {
                "id": pd.array([0, 2], dtype="int64"),
                "region": ["r0", "r0"],
                "ts": stamp([1, 5]),
                "ev": pd.array([BASE, BASE], dtype="int64"),
                "v": [0.0, 2.0],
                "_hoodie_is_deleted": [False, False],
            }
        )
    )
    t.write(pd.DataFrame({"id": pd.array([2], dtype="int64"), "region": ["r0"], "ts": stamp([1])}), "delete")
    t.write(_deletes([0]), "delete")
    assert _rs(t.path) == [(2, pd.Timestamp(BASE + 5000, unit="ms", tz="UTC"), 2.0)]
    assert sorted(t.refresh().read()["id"].to_pylist()) == [2]
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c)
    assert sorted(t.refresh().read()["id"].to_pylist()) == [2]
    assert [r[0] for r in _rs(t.path)] == [2]
