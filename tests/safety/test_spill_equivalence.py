"""The same compaction run in memory, spilled under tiny budgets and on Spark gives every query the same answer.

Drives adversarial tables (v6, v8 and v9, partitioned or not, with or without a base file from an earlier
compaction, event-time and commit-time ordering): one key updated in every write, keys that land in the same spill
partition, keys and string values of thousands of characters, nested and nullable columns, deletes then re-inserts
of one key, ordering-value ties across writes and inside one write, commit-time deletes (no ordering value) with
ordered deletes and lower records after them, soft deletes, rows whose event time is exactly the threshold T, one
large write and many small ones. One compaction plan (full, or event-time partial with and without the exact split)
is scheduled once and run on copies of the table:

* ``default`` — the default budget: nothing spills;
* ``spill`` — ``hoodie.memory.compaction.max.size=1``: every task spills from its first batch into the most hash
  partitions it allows;
* ``blocks`` — the same with every log block its own batch (``MemoryBudget.batch_bytes`` = 1 byte: each batch is
  reduced on its own before it goes to disk, across delete/re-insert and commit-time-delete boundaries);
* ``late`` — every block its own batch and a key state limit of a few KiB, so that the spill starts part-way
  through the logs with few partitions (many keys share one);
* ``spark`` (its own test) — the 1-byte budget on the session's Spark executors.

Checked, against the ``default`` run and against the answers before the compaction: the snapshot (every column,
nested ones included, with the records' commit times and sequence numbers), projections, time travel, incremental
windows between writes, the read-optimized view, hudi-rs's snapshot and read-optimized view; against
:class:`tests.safety.model.Model` (plain Python, folding what was committed): the snapshot and the read-optimized
view the compaction's forms give. Across the runs: the new base files' rows, their Parquet footer keys
(``hoodie_min_record_key``/``hoodie_max_record_key`` = the least and greatest key written), the commit's write stats
(counts and the event-time range the preview later trusts, which must be the range of the rows written), the next
preview's per-slice and per-log facts, and the carry-over logs' records. Every run spills into
``hoodie.memory.spillable.map.path`` outside the table, which must be empty afterwards.

Stock Spark-written tables (delete ordering types, duplicate keys, added and promoted columns, v6/v8/v9) compact
alike in memory and spilled.

Failures: a full disk under the spill or under the new base file (a CompactionExecutionError or StorageError naming
it, no file left), Ctrl-C while spilling, after it and between partitions (no spill file left, nothing committed,
a second run commits), spill settings refused before the plan goes inflight (inside the table, a URI, relative, a
file), tasks side by side under a low open-file limit, and the shared decoding pool a task is using.

CI runs two cases on one seed without the ``spill`` run, asking time travel and incremental windows at a few
writes, and five stock tables; a long run (``EVT_SPILL_EQ_ALL=1``, or ``EVT_SPILL_EQ_SEEDS=<n>`` seeds per case)
runs every case, run and stock table with larger tables and asks at every write.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import (
    EventTimeBasedCompactionStrategy,
    UnBoundedCompactionStrategy,
    bounded_merge,
    merge_task,
)
from evt_toolkit.compaction.bounded_merge import MEMORY_MAX_SIZE_KEY, SPILL_PATH_KEY
from evt_toolkit.storage.temporary import is_temporary_name
from evt_toolkit.table.timeline import COMMIT, COMPACTION
from tests.safety.model import Model, Rec

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

BASE = 1_700_000_000_000
T = 500  # the event-time threshold, ms after BASE
SEEDS = int(os.environ.get("EVT_SPILL_EQ_SEEDS", "1"))
LONG = bool(SEEDS > 1 or os.environ.get("EVT_SPILL_EQ_ALL"))
#: Writes time travel and incremental windows are asked at (every write in a long run).
QUERIED = 1000 if LONG else 4
BULK, STEPS = (1500, 22) if LONG else (400, 10)
NEST = pa.struct([("a", pa.int64()), ("b", pa.list_(pa.string())), ("c", pa.struct([("d", pa.float64())]))])
DATA_COLUMNS = ["k", "ts", "ev", "s", "nest", "opt"]
META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path"]


def _colliding_keys(n: int) -> list[str]:
    """``n`` keys that the spill's hash puts in one partition, whatever the partition count up to 256."""
    cands = [f"col{i:05d}" for i in range(40_000)]
    ids = bounded_merge._partition_ids(pa.array(cands), 256 * 255 * 7)  # a multiple of every count that divides it
    by: dict[int, list[str]] = {}
    for k, p in zip(cands, ids.tolist(), strict=True):
        by.setdefault(p % 256, []).append(k)
    return max(by.values(), key=len)[:n]


COLLIDING = _colliding_keys(6)
LONG_KEYS = [("L" * 4000) + f"{i}" for i in range(3)]
ODD_KEYS = [" ", "a\x00b", "ｆｕｌｌ", "é", "z" * 70]


class _Table:
    """An adversarial table and the model of what was committed."""

    def __init__(self, root: Path, seed: int, version: int, partitioned: bool, with_base: bool, mode: str) -> None:
        self.rng = random.Random(seed)
        self.partitioned = partitioned
        self.t = evt.HudiTable.create(
            root,
            "spilleq",
            "k",
            partition_by="region" if partitioned else None,
            ordering_field="ts",
            event_time_field="ev",
            buckets=1,
            merge_mode=mode,
            table_version=version,
        )
        self.model = Model(event_time=mode == "event_time")
        self.writes: list[str] = []
        self.serial = 0
        self.with_base = with_base

    def region(self, k: str) -> str:
        return f"r{sum(map(ord, k)) % 2}" if self.partitioned else ""

    def group(self, k: str) -> str:
        return f"region={self.region(k)}" if self.partitioned else ""

    def _row(self, k: str, ts: int, ev: int, big: bool = False, soft: bool = False) -> dict[str, Any]:
        self.serial += 1
        n = self.serial
        s = (f"{n}:" + "é" * 70_000) if big else f"{n}:" + "x" * (n % 300)
        nest = None if n % 5 == 0 else {"a": None if n % 3 == 0 else n, "b": [f"{n}"] * (n % 4), "c": {"d": n / 7}}
        return {
            "k": k,
            "ts": ts,
            "ev": BASE + ev,
            "s": s,
            "nest": nest,
            "opt": None if n % 2 else n * 0.5,
            "_hoodie_is_deleted": soft,
        }

    def upsert(self, rows: list[dict[str, Any]]) -> None:
        tbl = pa.table(
            {
                "k": pa.array([r["k"] for r in rows], pa.string()),
                **({"region": pa.array([self.region(r["k"]) for r in rows])} if self.partitioned else {}),
                "ts": pa.array([r["ts"] for r in rows], pa.int64()),
                "ev": pa.array([r["ev"] for r in rows], pa.int64()),
                "s": pa.array([r["s"] for r in rows], pa.string()),
                "nest": pa.array([r["nest"] for r in rows], NEST),
                "opt": pa.array([r["opt"] for r in rows], pa.float64()),
                "_hoodie_is_deleted": pa.array([r["_hoodie_is_deleted"] for r in rows]),
            }
        )
        self.writes.append(self.t.write(tbl))
        best: dict[str, Rec] = {}
        for r in rows:  # duplicates in one write: the greatest ordering value, ties to the later row
            rec = Rec(r["k"], "data", r["ts"], {c: r[c] for c in [*DATA_COLUMNS, "_hoodie_is_deleted"]})
            if r["k"] not in best or rec.ts >= best[r["k"]].ts:  # type: ignore[operator]
                best[r["k"]] = rec
        self._model(list(best.values()))

    def delete(self, keys: list[str], ts: int | None, ev: int) -> None:
        cols: dict[str, Any] = {"k": pa.array(keys, pa.string())}
        if self.partitioned:
            cols["region"] = pa.array([self.region(k) for k in keys])
        if ts is not None:
            cols["ts"] = pa.array([ts] * len(keys), pa.int64())
        cols["ev"] = pa.array([BASE + ev] * len(keys), pa.int64())
        self.writes.append(self.t.write(pa.table(cols), "delete"))
        self._model([Rec(k, "ct" if ts is None else "del", ts) for k in keys])

    def _model(self, recs: list[Rec]) -> None:
        by: dict[str, list[Rec]] = {}
        for r in recs:
            by.setdefault(self.group(r.key), []).append(r)
        for g, rs in by.items():
            self.model.write(g, rs)

    def build(self) -> None:
        rng = self.rng
        ev_choices = [T - 1, T, T, T + 1, 100, 900]
        busy = [f"b{i:03d}" for i in range(30)] + COLLIDING + LONG_KEYS + ODD_KEYS
        bulk = [self._row(f"k{i:05d}", 1, rng.choice(ev_choices)) for i in range(BULK)]
        bulk += [self._row(k, 1, rng.choice(ev_choices), big=i < 2) for i, k in enumerate(busy)]
        bulk.append(self._row("hot", 0, T))
        self.upsert(bulk)  # one large block
        for step in range(STEPS):
            if self.with_base and step == 6:
                self.compact_first()
            x = rng.random()
            hot_ts = step // 2  # a tie with the write before every other time: the later write wins
            if step % 7 == 3:
                self.delete(["hot", *rng.sample(busy, 2)], None, rng.choice(ev_choices))  # commit-time delete
                self.delete(["hot"], 99, rng.choice(ev_choices))  # arrives on it: dropped
            elif x < 0.2:
                self.delete(rng.sample(busy, 3), rng.choice([1, 3, 5, 9]), rng.choice(ev_choices))
            rows = [self._row("hot", hot_ts, rng.choice(ev_choices))]
            for k in rng.sample(busy, 5):
                rows.append(self._row(k, rng.choice([1, 3, 5, 5, 7]), rng.choice(ev_choices), soft=rng.random() < 0.1))
            if step == 9:  # duplicates inside one write, one a tie
                rows += [self._row("b000", 6, T), self._row("b000", 6, T + 1), self._row("b001", 2, T)]
            self.upsert(rows)

    def compact_first(self) -> None:
        c = self.t.compaction.schedule(UnBoundedCompactionStrategy())
        assert c is not None
        self.t.compaction.run(c)
        self.learn(c.instant)

    def learn(self, instant: str) -> None:
        """Tell the model which form the compaction at ``instant`` gave each key (from the RO view)."""
        t = self.t.refresh()
        plan = t.timeline.compaction_plan(t.timeline.instant(instant, COMPACTION))
        ro = _by_key(t.read("read_optimized"))
        for op in plan.operations:
            g = self.model.groups.get(op.partition_path)
            keys = set(g.base) | {r.key for u in g.units for r in u} if g else set()
            problems, _ = self.model.compact(op.partition_path, len(op.delta_files), {k: ro.get(k) for k in keys})
            assert not problems, problems


def _by_key(t: pa.Table) -> dict[str, dict[str, Any]]:
    return {r["k"]: {c: r[c] for c in DATA_COLUMNS} for r in t.select(DATA_COLUMNS).to_pylist()}


def _sorted(t: pa.Table) -> list[Any]:
    return sorted(t.to_pylist(), key=repr)


def answers(t: evt.HudiTable, writes: list[str]) -> dict[Any, Any]:
    """Every query answer the table gives: snapshot, projections, time travel, incremental windows, RO, hudi-rs."""
    t = t.refresh()
    out: dict[Any, Any] = {"snapshot": _sorted(t.read(columns=[*META, *DATA_COLUMNS]))}
    for cols in (["k", "nest"], ["s"], ["opt", "ev", "k"], ["_hoodie_commit_time", "k"]):
        out["projection", *cols] = _sorted(t.read(columns=cols))
    for w in writes[:: max(1, len(writes) // QUERIED)]:
        out["as of", w] = _sorted(t.read(as_of=w, columns=["k", "ts", "s", "nest", "_hoodie_commit_seqno"]))
    step = max(1, len(writes) // QUERIED)
    for b, e in zip(writes[::step], writes[1::step], strict=False):
        out["incremental", b, e] = _sorted(t.read("incremental", begin=b, end=e, columns=["k", "ts", "opt"]))
    out["ro"] = _sorted(t.read("read_optimized", columns=[*META, *DATA_COLUMNS]))
    for ro in (False, True):
        b = hudi.HudiTableBuilder.from_base_uri(str(t.path))
        if ro:
            b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
        batches = b.build().read()
        rs = pa.Table.from_batches(batches) if batches else pa.table({c: [] for c in DATA_COLUMNS})
        out["hudi-rs", ro] = _sorted(rs.select(["k", "ts", "ev", "s", "opt"]))
    return out


def but_ro(answers: dict[Any, Any]) -> dict[Any, Any]:
    """The answers a compaction must not change: all but the read-optimized views (ours and hudi-rs's)."""
    return {k: v for k, v in answers.items() if k not in ("ro", ("hudi-rs", True))}


def outputs(t: evt.HudiTable, instant: str) -> dict[str, Any]:
    """The compaction's base files (rows by key, footer keys), write stats and carry-over records."""
    from tests.compaction.test_spill import _outputs

    bases, carries = _outputs(t, instant)
    meta = t.refresh().timeline.commit_metadata(t.timeline.instant(instant, COMMIT))
    stats = {}
    for s in meta.write_stats:
        rec = dict(s.record)
        for volatile in ("totalWriteBytes", "fileSizeInBytes", "runtimeStats", "totalLogSizeCompacted"):
            rec.pop(volatile, None)
        stats[s.path] = rec
        with t.storage.open_input(s.path) as fh:
            footer = pq.ParquetFile(fh).metadata.metadata or {}
        rows = bases[s.path.rsplit("/", 1)[-1]]
        keys = rows["_hoodie_record_key"].to_pylist()
        ev = [v for v in rows["ev"].to_pylist() if v is not None]
        if keys:
            assert footer[b"hoodie_min_record_key"].decode() == min(keys), s.path
            assert footer[b"hoodie_max_record_key"].decode() == max(keys), s.path
        else:
            assert b"hoodie_min_record_key" not in footer
        # The event-time range the preview trusts is the range of the rows written.
        assert (s.min_event_time, s.max_event_time) == ((min(ev), max(ev)) if ev else (None, None)), s.path
    # What the next compaction's preview says of the new slices (event-time facts of base files and carry-overs).
    pv = t.compaction.preview(EventTimeBasedCompactionStrategy(BASE + T + 200), now_ms=BASE + 10_000)
    steady = [
        tbl.select([c for c in tbl.column_names if not any(w in c for w in ("size", "bytes", "offset", "elapsed"))])
        for tbl in (pv.per_slice, pv.per_log)
    ]
    return {
        "preview": [_sorted(x) for x in steady],
        "bases": {n: b.drop_columns(["_hoodie_file_name"]) for n, b in bases.items()},
        "carries": carries,
        "stats": stats,
    }


def _set(path: Path, key: str, value: str) -> None:
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + f"{key}={value}\n")


@pytest.fixture
def root() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="evt-spilleq-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def spills(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Partition counts of every spill a task started."""
    seen: list[int] = []
    original = bounded_merge._Spill

    class Recording(original):  # type: ignore[misc, valid-type]
        def __init__(self, spill_root: str | None, partitions: int, *args: object) -> None:
            super().__init__(spill_root, partitions, *args)
            seen.append(partitions)

    monkeypatch.setattr(bounded_merge, "_Spill", Recording)
    yield seen


def _schedule(src: _Table, kind: str) -> tuple[str, bool]:
    exact = kind == "partial exact"
    strategy: Any = UnBoundedCompactionStrategy() if kind == "full" else EventTimeBasedCompactionStrategy(BASE + T)
    c = src.t.compaction.schedule(strategy, exact_split=exact)
    assert c is not None, "the plan compacts something"
    return c.instant, exact


def _run_mode(root: Path, name: str, instant: str, monkeypatch: pytest.MonkeyPatch, spark: Any = None) -> evt.HudiTable:
    shutil.copytree(root / "scheduled", root / name, symlinks=True)
    spill_dir = root / f"spill-{name}"
    spill_dir.mkdir()
    _set(root / name, SPILL_PATH_KEY, str(spill_dir))
    if name != "default":
        _set(root / name, MEMORY_MAX_SIZE_KEY, "1")
    with monkeypatch.context() as m:
        if name in ("blocks", "late"):
            m.setattr(bounded_merge.MemoryBudget, "batch_bytes", property(lambda self: 1))
        if name == "late":
            m.setattr(bounded_merge.MemoryBudget, "state_bytes", property(lambda self: 48 << 10))
        t = evt.HudiTable.open(root / name)
        t.compaction.run(instant, spark=spark)
    assert list(spill_dir.iterdir()) == [], f"{name}: spill files left behind"
    assert not [p for p in (root / name).rglob("*") if "spill" in p.name], f"{name}: spill files in the table"
    return t


ALL_CASES = [
    # (version, partitioned, base file before, compaction, merge mode)
    (6, True, False, "full", "event_time"),
    (9, True, True, "partial exact", "event_time"),
    (9, False, True, "full", "commit_time"),
    (9, False, True, "full", "event_time"),
    (9, True, True, "partial", "event_time"),
    (6, True, True, "partial exact", "event_time"),
    (9, True, False, "partial exact", "event_time"),
    (6, False, True, "partial", "commit_time"),
    (8, True, True, "partial exact", "event_time"),
]
CASES = ALL_CASES if LONG else ALL_CASES[:2]
#: The runs compared (CI leaves out ``spill``: ``blocks`` spills under the same budget, batch by batch, and the
#: Spark test runs the 1-byte budget with whole batches).
MODES = ("default", "spill", "blocks", "late") if LONG else ("default", "blocks", "late")


@pytest.mark.parametrize("seed", range(SEEDS))
@pytest.mark.parametrize(("version", "partitioned", "with_base", "kind", "mode"), CASES)
def test_spilled_compactions_keep_every_answer(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    spills: list[int],
    seed: int,
    version: int,
    partitioned: bool,
    with_base: bool,
    kind: str,
    mode: str,
) -> None:
    src = _Table(root / "scheduled", seed, version, partitioned, with_base, mode)
    src.build()
    before = answers(src.t, src.writes)
    assert "hot" in {r["k"] for r in before["snapshot"]}, "the key written in every write is live"
    model_rows = {k: {c: r[c] for c in DATA_COLUMNS} for k, r in src.model.snapshot().items()}
    assert _by_key(src.t.read()) == model_rows, "the table reads as the model says before the compaction"
    instant, _ = _schedule(src, kind)
    runs: dict[str, tuple[dict[Any, Any], dict[str, Any]]] = {}
    for name in MODES:
        spills.clear()
        t = _run_mode(root, name, instant, monkeypatch)
        assert bool(spills) is (name != "default"), f"{name}: spilled {spills}"
        if name == "spill":
            assert max(spills) == bounded_merge.MAX_PARTITIONS
        if name == "late":
            assert min(spills) < bounded_merge.MAX_PARTITIONS, "the late spill shares partitions between many keys"
        after = answers(t, src.writes)
        changed = [k for k in but_ro(before) if before[k] != after[k]]
        assert not changed, f"{name}: the compaction changed {changed[:3]}"
        runs[name] = (after, outputs(t, instant))
    ref_answers, ref_outputs = runs["default"]
    for name, (got_answers, got_outputs) in runs.items():
        assert got_answers == ref_answers, f"{name}: answers differ from the unspilled run"
        assert got_outputs["stats"] == ref_outputs["stats"], f"{name}: write stats differ"
        assert got_outputs["preview"] == ref_outputs["preview"], f"{name}: the next preview differs"
        assert got_outputs["carries"] == ref_outputs["carries"], f"{name}: carry-over records differ"
        assert sorted(got_outputs["bases"]) == sorted(ref_outputs["bases"])
        for n, b in ref_outputs["bases"].items():
            assert got_outputs["bases"][n].equals(b), f"{name}: rows of {n} differ"
    # The model: the snapshot as committed, and the RO view the compaction's forms give.
    src.t = evt.HudiTable.open(root / MODES[-1])  # a spilled run
    src.learn(instant)
    want = {k: {c: r[c] for c in DATA_COLUMNS} for k, r in src.model.snapshot().items()}
    assert _by_key(src.t.read()) == want
    ro_model = {k: {c: r[c] for c in DATA_COLUMNS} for k, r in src.model.ro().items()}
    assert _by_key(src.t.read("read_optimized")) == ro_model
    if kind == "full":
        assert ro_model == want, "after a full compaction the RO view is the snapshot"


# -- failures while spilling -----------------------------------------------------------------------------------------


def _small_table(root: Path, spill_dir: Path | None) -> tuple[evt.HudiTable, str, dict[Any, Any], list[str]]:
    """A partitioned v9 table whose full compaction spills (1-byte budget) into ``spill_dir``; the plan scheduled."""
    src = _Table(root, 3, 9, True, False, "event_time")
    bulk = [src._row(f"k{i:04d}", 1, T) for i in range(400)]
    src.upsert(bulk)
    src.delete(["k0001", "k0002"], None, T)
    src.upsert([src._row("k0001", 0, T + 1), src._row("k0003", 1, T - 1)])
    _set(root, MEMORY_MAX_SIZE_KEY, "1")
    if spill_dir is not None:
        spill_dir.mkdir(exist_ok=True)
        _set(root, SPILL_PATH_KEY, str(spill_dir))
    t = evt.HudiTable.open(root)
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    return t, c.instant, answers(t, src.writes), src.writes


def _untouched(t: evt.HudiTable, instant: str, before: dict[Any, Any], writes: list[str]) -> None:
    t = t.refresh()
    assert not [i for i in t.timeline.completed() if i.time == instant], "nothing was committed"
    assert answers(t, writes) == before, "the failed run changed an answer"
    assert not [p for p in Path(t.path).rglob("*") if is_temporary_name(p.name) or "spill" in p.name]


@pytest.mark.parametrize("full", ["spill", "base file"])
def test_a_full_disk_fails_the_task_naming_what_it_wrote_and_leaves_nothing(
    root: Path, monkeypatch: pytest.MonkeyPatch, full: str
) -> None:
    """The disk under ``hoodie.memory.spillable.map.path`` is full (every spilled partition a write to /dev/full),
    or the table's disk while the new base file is written: the run fails with a CompactionExecutionError naming the
    spill folder and the compaction, or a StorageError naming the base file, not a bare OSError; the partial spill
    files are removed though closing their streams fails too, and no partial base file stays. Nothing is committed;
    a second run with room commits and every answer stays."""
    spill_dir = root / "spill"
    t, instant, before, writes = _small_table(root / "t", spill_dir)
    with monkeypatch.context() as m:
        if full == "spill":
            path = bounded_merge._Spill._path
            m.setattr(
                bounded_merge._Spill,
                "_path",
                lambda self, kind, p: "/dev/full" if kind == "log" else path(self, kind, p),
            )
            error: type[Exception] = evt.CompactionExecutionError
            named = str(spill_dir)
        else:
            writer = merge_task.pq.ParquetWriter

            def on_full_disk(sink: Any, *args: Any, **kwargs: Any) -> Any:
                local = isinstance(sink, str) and is_temporary_name(os.path.basename(sink))
                return writer("/dev/full" if local else sink, *args, **kwargs)

            m.setattr(merge_task.pq, "ParquetWriter", on_full_disk)
            error, named = evt.StorageError, f"_{instant}.parquet"
        with pytest.raises(error) as err:
            t.compaction.run(instant)
    msg = str(err.value)
    assert named in msg and instant in msg and "No space left" in msg, msg
    assert list(spill_dir.iterdir()) == [], "spill files left behind"
    _untouched(t, instant, before, writes)
    t.refresh().compaction.run(instant)
    after = answers(t, writes)
    assert but_ro(after) == but_ro(before)
    assert list(spill_dir.iterdir()) == []


@pytest.mark.parametrize("where", ["spilling", "merged", "parts"])
def test_an_interrupted_spilling_task_leaves_no_spill_file(
    root: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Ctrl-C while the key state is being written to disk, after it was, or between the partitions' merges: the
    spill folder is empty afterwards, the table has no partial file and answers as before; a second run commits."""
    spill_dir = root / "spill"
    t, instant, before, writes = _small_table(root / "t", spill_dir)
    calls = {"n": 0}

    def interrupt_at(n: int) -> None:
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt

    hook = None
    with monkeypatch.context() as m:
        if where == "spilling":
            write = bounded_merge._Spill.write

            def interrupted_write(self: Any, kind: str, rows: pa.Table) -> None:
                interrupt_at(2)
                write(self, kind, rows)

            m.setattr(bounded_merge._Spill, "write", interrupted_write)
        elif where == "parts":
            merge_part = bounded_merge._merge_part

            def interrupted_part(*args: Any) -> Any:
                interrupt_at(40)
                return merge_part(*args)

            m.setattr(bounded_merge, "_merge_part", interrupted_part)
        else:

            def hook(task: Any, stage: str) -> None:
                if stage == "merged":
                    raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            if hook is not None:
                from evt_toolkit.compaction.executor import run_compaction

                run_compaction(t, instant, fault_hook=hook)
            else:
                t.compaction.run(instant)
    assert list(spill_dir.iterdir()) == [], "spill files left behind"
    _untouched(t, instant, before, writes)
    t.refresh().compaction.run(instant)
    assert list(spill_dir.iterdir()) == []


@pytest.mark.parametrize("setting", ["inside", "the table itself", "uri", "relative", "a file", "budget"])
def test_a_spill_path_inside_the_table_or_not_local_is_refused_before_the_run_starts(
    root: Path, setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hoodie.memory.spillable.map.path`` inside the table's folder (its spill files would sit among the table's
    files), a URI (spill files go to local disk only; it was taken for a folder under the working directory) or a
    relative path (the working directory of whichever worker runs the task) or an existing file (every task failed
    on it after the plan went inflight), and a malformed budget, are refused
    with a TableConfigError naming ``hoodie.properties`` before the plan goes inflight: the timeline is as it was."""
    monkeypatch.chdir(root)  # a URI taken for a relative path would land here
    t, instant, before, writes = _small_table(root / "t", None)
    if setting == "inside":
        _set(root / "t", SPILL_PATH_KEY, str(root / "t" / "region=r0"))
    elif setting == "the table itself":
        _set(root / "t", SPILL_PATH_KEY, str(root / "x" / ".." / "t") + "/")
    elif setting == "uri":
        _set(root / "t", SPILL_PATH_KEY, "s3a://bucket/tmp")
    elif setting == "relative":
        _set(root / "t", SPILL_PATH_KEY, "spill")
    elif setting == "a file":
        (root / "spill").write_text("not a folder")
        _set(root / "t", SPILL_PATH_KEY, str(root / "spill"))
    else:
        _set(root / "t", MEMORY_MAX_SIZE_KEY, "lots")
    files = sorted(str(p) for p in Path(t.path).rglob("*"))
    with pytest.raises(evt.TableConfigError, match=r"hoodie\.properties"):
        evt.HudiTable.open(root / "t").compaction.run(instant)
    assert sorted(str(p) for p in Path(t.path).rglob("*")) == files, "the refused run changed the table's files"
    assert sorted(p.name for p in root.iterdir() if p.name != "spill") == ["t"], "nothing written beside the table"
    _untouched(t, instant, before, writes)


def test_spark_spilled_compaction_equals_the_local_one(root: Path, monkeypatch: pytest.MonkeyPatch, spark: Any) -> None:
    """The 1-byte budget on Spark's executors (each task spills into the most partitions it allows): the same
    answers, base file rows, footers, write stats and carry-over records as the unspilled run here."""
    src = _Table(root / "scheduled", 11, 9, True, True, "event_time")
    src.build()
    before = answers(src.t, src.writes)
    instant, _ = _schedule(src, "partial")
    runs = {}
    for name, session in (("default", None), ("spark", spark)):
        t = _run_mode(root, name, instant, monkeypatch, session)
        after = answers(t, src.writes)
        changed = [k for k in but_ro(before) if before[k] != after[k]]
        assert not changed, f"{name}: the compaction changed {changed[:3]}"
        runs[name] = (after, outputs(t, instant))
    assert runs["spark"][0] == runs["default"][0]
    (_, lo), (_, so) = runs["default"], runs["spark"]
    assert lo["stats"] == so["stats"] and lo["carries"] == so["carries"] and lo["preview"] == so["preview"]
    assert sorted(lo["bases"]) == sorted(so["bases"])
    for n, b in lo["bases"].items():
        assert so["bases"][n].equals(b), n


def test_a_decoding_pool_in_use_keeps_working_when_another_task_needs_more_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tasks side by side (or a read beside a compaction) share the process's decoding pool. One that asks for more
    threads than the pool has gets a larger one; the pool another task got a moment before, and is handing its
    chunks to, must still take them (it was shut down: ``cannot schedule new futures after shutdown``)."""
    from evt_toolkit.format import log_content

    monkeypatch.setattr(log_content, "_POOL", None)  # as in a fresh worker
    pool = log_content._decode_pool(2)
    log_content._decode_pool(3)  # another task, at the same time, with more chunks to decode
    assert list(pool.map(lambda x: x * 2, [1, 2, 3])) == [2, 4, 6]


def test_spilling_tasks_side_by_side_hold_few_files_open(root: Path, spills: list[int]) -> None:
    """Two tasks spilling side by side into 256 hash partitions each, log rows and base rows, under an open-file
    limit of a couple of hundred more than the process holds (1024 is a common default, shared by as many tasks as
    the machine has cores): the spill must not hold a file open per partition (it held two per partition and task
    until every partition was written) and the run commits with every answer as before."""
    import resource

    src = _Table(root / "t", 5, 9, True, False, "event_time")
    src.upsert([src._row(f"k{i:04d}", 1, T) for i in range(1200)])
    src.compact_first()  # base files to spill as well
    src.upsert([src._row(f"k{i:04d}", 2, T) for i in range(0, 1200, 2)])
    _set(root / "t", MEMORY_MAX_SIZE_KEY, "1")
    t = evt.HudiTable.open(root / "t")
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None and len(c.plan.operations) == 2
    before = answers(t, src.writes)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    open_now = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + 200, hard))
    try:
        evt.HudiTable.open(root / "t").compaction.run(c.instant)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert spills and min(spills) == bounded_merge.MAX_PARTITIONS
    assert but_ro(answers(t, src.writes)) == but_ro(before)


#: Stock Hudi tables (Spark-written) a full compaction takes: ordering types of deletes, duplicate keys, stale
#: event-time deletes, added and promoted columns, null containers, v6/v8/v9 trips with updates and deletes.
STOCK = [
    "mor_table_delete_ord_decimal",
    "mor_table_delete_ord_timestamp",
    "mor_table_duplicate_keys",
    "mor_table_event_time_stale",
    "mor_table_evo_add_col",
    "mor_table_evo_promotion",
    "mor_table_null_containers",
    "mor_v6_trips_8i3d",
    "mor_v8_trips_8i3u1d",
    "mor_v9_mor_compacted_incremental",
]
STOCK_CI = [
    "mor_table_delete_ord_decimal",
    "mor_table_duplicate_keys",
    "mor_table_evo_promotion",
    "mor_v6_trips_8i3d",
    "mor_v8_trips_8i3u1d",
]


@pytest.mark.parametrize("fixture", STOCK if LONG else STOCK_CI)
def test_stock_tables_compact_alike_spilled_or_not(
    root: Path, monkeypatch: pytest.MonkeyPatch, shared_fixtures: Path, fixture: str
) -> None:
    """A stock table's full compaction in memory, spilled block by block and spilled late: the same snapshot as
    before (ours and hudi-rs's), the same read-optimized view, base file rows and carry-over records."""
    import json

    table_dir = json.loads((shared_fixtures / "tables" / fixture / "fixture.json").read_text())["table_dir"]
    shutil.copytree(shared_fixtures / "tables" / fixture / table_dir, root / "scheduled", symlinks=True)
    t = evt.HudiTable.open(root / "scheduled")
    drop = ["_hoodie_file_name"]
    before = _sorted(t.read().drop_columns(drop))
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    runs = {}
    for name in ("default", "blocks", "late"):
        done = _run_mode(root, name, c.instant, monkeypatch)
        assert _sorted(done.read().drop_columns(drop)) == before, f"{name}: the compaction changed the snapshot"
        rs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(done.path)).build().read())
        runs[name] = (
            _sorted(done.read("read_optimized").drop_columns(drop)),
            rs.num_rows,
            *_outputs_of(done, c.instant),
        )
    for name, got in runs.items():
        assert got[:2] == runs["default"][:2] and got[1] == len(before), name
        assert got[3] == runs["default"][3], f"{name}: carry-over records differ"
        assert sorted(got[2]) == sorted(runs["default"][2])
        for n, b in runs["default"][2].items():
            assert got[2][n].equals(b), f"{name}: rows of {n} differ"


def _outputs_of(t: evt.HudiTable, instant: str) -> tuple[dict[str, pa.Table], Any]:
    from tests.compaction.test_spill import _outputs

    bases, carries = _outputs(t, instant)
    return {n: b.drop_columns(["_hoodie_file_name"]) for n, b in bases.items()}, carries
