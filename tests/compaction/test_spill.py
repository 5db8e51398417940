"""A compaction task that spills its key state to disk gives the same answers as one that does not.

``hoodie.memory.compaction.max.size`` = 1 byte forces every task of a run to spill from its first batch, with as many
hash partitions as it allows; the same plan run with the default budget does not spill. On tables with event-time
deletes, commit-time deletes, soft deletes, late data and base files, in both merge modes, full and partial
(event-time) compaction: the new base files hold the same rows, the carry-over logs the same records, and the
snapshot (ours and hudi-rs's) and the read-optimized view are unchanged / equal to the old base merged with exactly
the compacted logs. The hash-based per-key reduction the task uses is also checked against the sort-based one the
reader uses, on random candidates.
"""

from __future__ import annotations

import datetime
import os
import random
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, seed, settings
from hypothesis import strategies as st

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy, bounded_merge
from evt_toolkit.compaction.bounded_merge import MEMORY_MAX_SIZE_KEY, configured_memory_budget
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.errors import TableConfigError
from evt_toolkit.format.log_content import decode_data_block, decode_delete_block
from evt_toolkit.format.logfile import BlockType, read_block_content, scan_log_blocks
from evt_toolkit.read.merge import COMMIT_TIME, EVENT_TIME, LogCandidates, latest_per_key, merge_log_candidates
from tests.merge_oracle import sort_based_merge
from tests.tables import (
    BASE,
    carried_keys,
    create,
    deletes,
    expected_ro,
    history,
    hudi_rs,
    rows,
    same,
    same_ro,
    snapshot,
)

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

EXAMPLES = int(os.environ.get("EVT_PROPERTY_EXAMPLES", "10"))


@pytest.fixture
def spills(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Partition counts of every spill a task started during the test."""
    seen: list[int] = []
    original = bounded_merge._Spill

    class Recording(original):  # type: ignore[misc, valid-type]
        def __init__(self, root: str | None, partitions: int, *args: object) -> None:
            super().__init__(root, partitions, *args)
            seen.append(partitions)

    monkeypatch.setattr(bounded_merge, "_Spill", Recording)
    yield seen


def ct_deletes(ids: list[int]) -> pd.DataFrame:
    """Deletes without an ordering value: commit-time deletes (Spark SQL ``DELETE``)."""
    return pd.DataFrame({"id": pd.array(ids, dtype="int64"), "region": [f"r{i % 2}" for i in ids]})


def _set_budget(path: Path, value: str) -> None:
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + f"{MEMORY_MAX_SIZE_KEY}={value}\n")


def _outputs(t: evt.HudiTable, instant: str) -> tuple[dict[str, pa.Table], dict[str, list[tuple[str, object]]]]:
    """New base files' rows (sorted by key) and carry-over logs' records, by file name."""
    bases: dict[str, pa.Table] = {}
    carries: dict[str, list[tuple[str, object]]] = {}
    for f in t.storage.list_files(""):
        name = f.path.rsplit("/", 1)[-1]
        if name.endswith(".parquet") and f"_{instant}." in name:
            with t.storage.open_input(f.path) as fh:
                tbl = pq.read_table(fh)
            bases[name] = tbl.take(pc.sort_indices(tbl, sort_keys=[("_hoodie_record_key", "ascending")]))
        elif ".log.0_" in name and f"_{instant}.log" in name:
            recs: list[tuple[str, object]] = []
            with t.storage.open_input(f.path) as fh:
                for blk in scan_log_blocks(fh, f.size, f.path):
                    content = read_block_content(fh, blk)
                    if blk.block_type == BlockType.DELETE:
                        d = decode_delete_block(blk, content)
                        recs += [("delete", r) for r in sorted(d.to_pylist(), key=str)]
                    elif blk.block_type == BlockType.AVRO_DATA:
                        d = decode_data_block(blk, content)
                        recs += [("data", r) for r in sorted(d.to_pylist(), key=str)]
            carries[name] = sorted(recs, key=str)
    return bases, carries


def _run_both(src: Path, root: Path, strategy: object) -> tuple[str, str]:
    """Schedule one plan, then copy the table twice: one copy runs with the default budget, one is forced to spill."""
    shutil.copytree(src, root / "scheduled", symlinks=True)
    c = schedule_compaction(evt.HudiTable.open(root / "scheduled"), strategy, link_mode="copy")  # type: ignore[arg-type]
    assert c is not None
    for name, budget in (("plain", None), ("spilled", "1")):
        shutil.copytree(root / "scheduled", root / name, symlinks=True)
        if budget is not None:
            _set_budget(root / name, budget)
    return c.instant, c.instant


def _check_same(root: Path, plain_c: str, spilled_c: str, before: pa.Table) -> None:
    plain, spilled = evt.HudiTable.open(root / "plain"), evt.HudiTable.open(root / "spilled")
    want_ro = expected_ro(spilled, spilled_c)
    run_compaction(plain, plain_c)
    run_compaction(spilled, spilled_c)
    pb, pcarry = _outputs(plain, plain_c)
    sb, scarry = _outputs(spilled, spilled_c)
    assert sorted(pb) == sorted(sb) and pb, "the same base files"
    for name in pb:
        assert pb[name].equals(sb[name]), f"{name}: spilled rows differ from the unspilled task's"
    assert pcarry == scarry, "the same carry-over records"
    same(snapshot(spilled), before, "snapshot unchanged by a spilling compaction")
    same(hudi_rs(str(spilled.path)), before, "hudi-rs reads the spilled compaction's table as before")
    carried = carried_keys(spilled, spilled_c)
    same_ro(spilled.read("read_optimized"), want_ro, carried, "RO = old base ⊕ compacted prefix")
    same(plain.read("read_optimized"), spilled.read("read_optimized"), "RO equal with and without spilling")


def _rich_history(t: evt.HudiTable) -> None:
    history(t)  # late data, event-time deletes, soft deletes, a late lower-ordered update
    t.write(rows(range(40, 400), 70, 600))
    t.write(ct_deletes([8, 9, 41]), "delete")
    t.write(rows(list(range(0, 60)), 65, 300))  # late: below T, after the commit-time deletes
    t.write(deletes([42, 43], 80), "delete")
    t.write(rows(range(100, 700), 90, 900))


@pytest.mark.parametrize("merge_mode", ["commit_time", "event_time"])
@pytest.mark.parametrize("kind", ["full", "partial"])
def test_spilled_compaction_equals_unspilled_and_hudi_rs(
    tmp_path: Path, merge_mode: str, kind: str, spills: list[int]
) -> None:
    src = tmp_path / "src"
    t = create(src, merge_mode)
    _rich_history(t)
    if kind == "partial":
        # A first compaction gives the slices base files; the second one merges logs onto them.
        first = schedule_compaction(t, UnBoundedCompactionStrategy())
        assert first is not None
        run_compaction(t, first.instant)
        t.write(rows(range(300, 900), 95, 1000))
        t.write(ct_deletes([301, 5]), "delete")
        t.write(rows(range(350, 360), 99, 400))
        t.write(deletes([310], 97), "delete")
        strategy: object = EventTimeBasedCompactionStrategy(threshold=BASE + 700)
    else:
        strategy = UnBoundedCompactionStrategy()
    before = snapshot(evt.HudiTable.open(src))
    plain_c, spilled_c = _run_both(src, tmp_path, strategy)
    spills.clear()
    _check_same(tmp_path, plain_c, spilled_c, before)
    assert spills, "the 1-byte budget made the tasks spill"
    assert all(p >= 2 for p in spills)


@pytest.mark.parametrize("merge_mode", ["commit_time", "event_time"])
def test_spilled_block_by_block_equals_unspilled_and_hudi_rs(
    tmp_path: Path, merge_mode: str, spills: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spilling from the first batch, every data block its own batch (a delete block joins the data block after it):
    each batch is reduced on its own before it goes to disk. A batch holding a commit-time delete and a later,
    lower-ordered record of the same key must still tell the final reduction that the delete came after the key's
    records of earlier batches (70, then a commit-time delete, then 65, which wins)."""
    src = tmp_path / "src"
    t = create(src, merge_mode)
    _rich_history(t)
    t.write(rows(range(500, 600), 70, 600))
    t.write(ct_deletes(list(range(500, 600))), "delete")
    t.write(rows(range(500, 600), 65, 300))
    before = snapshot(evt.HudiTable.open(src))
    plain_c, spilled_c = _run_both(src, tmp_path, UnBoundedCompactionStrategy())
    monkeypatch.setattr(bounded_merge.MemoryBudget, "batch_bytes", property(lambda self: 1))
    spills.clear()
    _check_same(tmp_path, plain_c, spilled_c, before)
    assert spills, "the 1-byte budget made the tasks spill"


_batch = st.tuples(
    st.sampled_from(["upsert", "upsert", "upsert", "delete", "ct_delete"]),
    st.lists(st.integers(0, 40), min_size=1, max_size=12, unique=True),
    st.integers(1, 60),
    st.integers(0, 1000),
    st.booleans(),
)


@seed(20261124)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    events=st.lists(_batch, min_size=2, max_size=8),
    threshold=st.integers(0, 1000),
    merge_mode=st.sampled_from(["commit_time", "event_time"]),
    base_first=st.booleans(),
)
def test_random_histories_spilled_equal_unspilled(
    events: list[tuple[str, list[int], int, int, bool]], threshold: int, merge_mode: str, base_first: bool
) -> None:
    root = Path(tempfile.mkdtemp(prefix="evt-spill-"))
    try:
        t = create(root / "src", merge_mode)
        half = len(events) // 2 if base_first else 0
        for i, (op, ids, ts, ev, soft) in enumerate(events):
            if i == half and base_first and i:
                c0 = schedule_compaction(t, UnBoundedCompactionStrategy())
                if c0 is not None:
                    run_compaction(t, c0.instant)
            if op == "delete":
                t.write(deletes(ids, ts), "delete")
            elif op == "ct_delete":
                t.write(ct_deletes(ids), "delete")
            else:
                flags = [soft] + [False] * (len(ids) - 1)
                t.write(rows(ids, ts, [ev + (j * 37) % 200 for j in range(len(ids))], deleted=flags))
        before = snapshot(evt.HudiTable.open(root / "src"))
        strategy = EventTimeBasedCompactionStrategy(threshold=BASE + threshold)
        try:
            plain_c, spilled_c = _run_both(root / "src", root, strategy)
        except AssertionError:
            return  # nothing to compact at this threshold
        _check_same(root, plain_c, spilled_c, before)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_budget_setting_is_checked() -> None:
    assert configured_memory_budget({}) is None
    assert configured_memory_budget({MEMORY_MAX_SIZE_KEY: "1048576"}) == 1 << 20
    with pytest.raises(TableConfigError, match=re.escape(MEMORY_MAX_SIZE_KEY)):
        configured_memory_budget({MEMORY_MAX_SIZE_KEY: "lots"}, "t/.hoodie/hoodie.properties")
    with pytest.raises(TableConfigError, match=re.escape("t/.hoodie/hoodie.properties")):
        configured_memory_budget({MEMORY_MAX_SIZE_KEY: "0"}, "t/.hoodie/hoodie.properties")


def _typed_ordering(typ: pa.DataType, f: Callable[[int], object]) -> Callable[[list[int | None]], pa.Array]:
    return lambda values: pa.array([None if v is None else f(v) for v in values], typ)


#: Ordering values 0..4 as each type, in the same order (the sort-based reference compares the typed values).
ORDERING_TYPES: dict[str, Callable[[list[int | None]], pa.Array]] = {
    "int64": _typed_ordering(pa.int64(), lambda v: v),
    "int64 wider than offsets allow": _typed_ordering(pa.int64(), lambda v: (v - 2) * (1 << 61)),
    "int32": _typed_ordering(pa.int32(), lambda v: v - 2),
    "uint64 past int64": _typed_ordering(pa.uint64(), lambda v: (1 << 63) + v),
    "timestamp": _typed_ordering(pa.timestamp("ms", tz="UTC"), lambda v: 1_700_000_000_000 + v),
    "date32": _typed_ordering(pa.date32(), lambda v: datetime.date(2024, 1, 1) + datetime.timedelta(days=v)),
    "string": _typed_ordering(pa.string(), lambda v: f"s{v}"),
    "double": _typed_ordering(pa.float64(), lambda v: v / 2 - 0.75),
}


_R = random.Random(0)


def _lpk_args(t: pa.Table) -> tuple[pa.ChunkedArray, ...]:
    return t["key"], t["seq"], t["ct_delete"], t["ord"]


@seed(7)
@settings(max_examples=max(EXAMPLES * 5, 20), deadline=None)
@given(
    data=st.lists(
        st.tuples(
            st.integers(0, 6),  # key
            st.one_of(st.none(), st.integers(0, 4)),  # ordering value
            st.sampled_from(["data", "delete", "ct"]),  # data row, delete-block delete, commit-time delete
        ),
        min_size=1,
        max_size=60,
    ),
    mode=st.sampled_from([COMMIT_TIME, EVENT_TIME]),
    ord_type=st.sampled_from(sorted(ORDERING_TYPES)),
    shuffle=st.randoms(use_true_random=False),
)
# Halves that reduce to a winner not telling how they fold onto the first half: 4, then a commit-time delete and 1
# (the delete must reach the final reduction); a commit-time delete, then a delete of 4 and 1 (the delete arrives on
# the commit-time delete and does not count); a commit-time delete, then 0 and a delete of 4 (the delete counts, as
# it came after a data record).
@example(data=[(0, 4, "data"), (0, None, "ct"), (0, 1, "data")], mode=EVENT_TIME, ord_type="int64", shuffle=_R)
@example(data=[(0, None, "ct"), (0, 4, "delete"), (0, 1, "data")], mode=EVENT_TIME, ord_type="int64", shuffle=_R)
@example(data=[(0, None, "ct"), (0, 0, "data"), (0, 4, "delete")], mode=EVENT_TIME, ord_type="int64", shuffle=_R)
def test_latest_per_key_equals_the_sort_based_merge(
    data: list[tuple[int, int | None, str]], mode: str, ord_type: str, shuffle: object
) -> None:
    """Every ordering type a table can have: integer and temporal values compared as offsets where their range
    allows, as a dense rank otherwise (a range too wide, unsigned values past int64, strings, doubles)."""
    n = len(data)
    seqs = list(range(0, 3 * n, 3))
    table = pa.table(
        {
            "key": pa.array([f"k{k}" for k, _, _ in data]),
            "seq": pa.array(seqs, pa.int64()),
            "is_delete": pa.array([c != "data" for _, _, c in data]),
            "ct_delete": pa.array([c == "ct" for _, _, c in data]),
            "ord": ORDERING_TYPES[ord_type]([o for _, o, _ in data]),
            "src": pa.array([int(c != "data") for _, _, c in data], pa.int8()),
            "idx": pa.array(np.arange(n, dtype=np.int64)),
        }
    )
    reference = sort_based_merge(table, mode)
    want = sorted(reference["idx"].to_pylist())
    # The merge the reads use: the same winners, in key order, with the same columns.
    assert merge_log_candidates(LogCandidates(table), mode).equals(reference)
    order = list(range(n))
    shuffle.shuffle(order)  # type: ignore[attr-defined]
    shuffled = table.take(pa.array(order))
    got = latest_per_key(*_lpk_args(shuffled), mode, pc.equal(shuffled["src"], 1))
    assert sorted(shuffled["idx"].take(pa.array(got)).to_pylist()) == want
    # As a compaction reduces its batches: the first and the second half of the records in replay order, each
    # reduced on its own as a run (keeping what a fold onto earlier records needs), then their results together, in
    # any order, give the same winners.
    half = n // 2
    firsts = []
    for part in (table.slice(0, half), table.slice(half)):
        kept = latest_per_key(*_lpk_args(part), mode, pc.equal(part["src"], 1), run=True)
        firsts.append(part.take(pa.array(kept)))
    both = pa.concat_tables(firsts)
    mixed = both.take(pa.array(shuffle.sample(range(both.num_rows), both.num_rows)))  # type: ignore[attr-defined]
    again = latest_per_key(*_lpk_args(mixed), mode, pc.equal(mixed["src"], 1))
    assert sorted(mixed["idx"].take(pa.array(again)).to_pylist()) == want


def test_default_budget_is_capped_at_the_slice(
    tmp_path: Path, spills: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no budget set, a task never budgets more than its slice's bytes (at least SMALL_SLICE_BUDGET)."""
    big = bounded_merge.MemoryBudget(6 << 30)
    assert big.for_slice(1 << 30).total == 1 << 30
    assert big.for_slice(100 << 20).total == bounded_merge.SMALL_SLICE_BUDGET
    assert big.for_slice(1 << 10).total == bounded_merge.SMALL_SLICE_BUDGET
    small = bounded_merge.MemoryBudget(1 << 20, "/spill")
    assert small.for_slice(100 << 20) is small, "a budget below the slice is kept"

    src = tmp_path / "src"
    t = create(src, "event_time")
    _rich_history(t)
    before = snapshot(evt.HudiTable.open(src))
    c = schedule_compaction(t, UnBoundedCompactionStrategy())
    assert c is not None
    shutil.copytree(src, tmp_path / "capped", symlinks=True)
    run_compaction(t, c.instant)
    assert not spills, "slices under SMALL_SLICE_BUDGET compact in memory with the default budget"
    # The same slices, were the floor lower: the default budget follows the slice's bytes and the task spills.
    monkeypatch.setattr(bounded_merge, "SMALL_SLICE_BUDGET", 1)
    capped = evt.HudiTable.open(tmp_path / "capped")
    run_compaction(capped, c.instant)
    assert spills and all(p >= 2 for p in spills)
    same(snapshot(capped), before, "snapshot unchanged")
    same(capped.read("read_optimized"), t.read("read_optimized"), "RO equal with and without the cap")


def test_allocator_switch_is_shared_by_tasks_side_by_side() -> None:
    """Two tasks switching Arrow's pool at once: the first one out leaves it switched, the last restores it."""
    original = pa.default_memory_pool()
    a = bounded_merge._Allocators().__enter__()
    b = bounded_merge._Allocators().__enter__()
    assert pa.default_memory_pool().backend_name == pa.system_memory_pool().backend_name
    a.__exit__()
    assert pa.default_memory_pool().backend_name == pa.system_memory_pool().backend_name
    b.__exit__()
    assert pa.default_memory_pool().backend_name == original.backend_name


@pytest.mark.parametrize("merge_mode", ["commit_time", "event_time"])
@pytest.mark.parametrize(("state_limit", "reduced_in_memory"), [(32 << 10, True), (1 << 20, False)])
def test_batch_by_batch_in_memory_equals_one_batch(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    spills: list[int],
    merge_mode: str,
    state_limit: int,
    reduced_in_memory: bool,
) -> None:
    """Every block its own batch, the batches kept as decoded until the key state reaches its limit: reduced there
    (32 KiB here) or only once at the end (1 MiB), never spilled; the outputs are the one-batch task's."""
    src = tmp_path / "src"
    _rich_history(create(src, merge_mode))
    before = snapshot(evt.HudiTable.open(src))
    plain_c, batched_c = _run_both(src, tmp_path, UnBoundedCompactionStrategy())
    shutil.rmtree(tmp_path / "spilled")  # the copy _run_both prepares with a 1-byte budget is not used here
    plain = evt.HudiTable.open(tmp_path / "plain")
    run_compaction(plain, plain_c)
    shutil.copytree(tmp_path / "scheduled", tmp_path / "batched", symlinks=True)
    batched = evt.HudiTable.open(tmp_path / "batched")
    flushes: list[int] = []
    reductions: list[int] = []
    flush, reduce_state = bounded_merge.BoundedSliceMerge._flush, bounded_merge.BoundedSliceMerge._reduce_state

    def counted_flush(self: bounded_merge.BoundedSliceMerge, *args: object) -> int:
        flushes.append(1)
        return flush(self, *args)  # type: ignore[arg-type]

    def counted_reduce(self: bounded_merge.BoundedSliceMerge) -> None:
        reductions.append(len(self._state))
        reduce_state(self)

    monkeypatch.setattr(bounded_merge.BoundedSliceMerge, "_flush", counted_flush)
    monkeypatch.setattr(bounded_merge.BoundedSliceMerge, "_reduce_state", counted_reduce)
    monkeypatch.setattr(bounded_merge.MemoryBudget, "batch_bytes", property(lambda self: 1))
    monkeypatch.setattr(bounded_merge.MemoryBudget, "state_bytes", property(lambda self: state_limit))
    spills.clear()
    run_compaction(batched, batched_c)
    assert not spills, "the key state stayed in memory"
    assert len(flushes) > len(_outputs(plain, plain_c)[0]), "several batches per task"
    assert bool(reductions) is reduced_in_memory, reductions
    assert all(n > 1 for n in reductions), "a reduction merges several decoded batches"
    pb, pcarry = _outputs(plain, plain_c)
    bb, bcarry = _outputs(batched, batched_c)
    assert sorted(pb) == sorted(bb) and pb
    for name in pb:
        assert pb[name].equals(bb[name]), f"{name}: rows differ from the one-batch task's"
    assert pcarry == bcarry
    same(snapshot(batched), before, "snapshot unchanged")
    same(hudi_rs(str(batched.path)), before, "hudi-rs reads the table as before")
