"""Merge semantics through every compaction shape, against Hudi 1.x's record merger and hudi-rs.

Hudi 1.x merges a key's log records by folding them in replay order (``BufferedRecordMergerFactory``'s
``EventTimeRecordMerger``, which hudi-rs mirrors): a commit-time delete (no ordering value, or SQL ``DELETE``'s
``IntWrapper(0)``) always wins; a delete *with* an ordering value that arrives on a commit-time delete is dropped
(``deltaMergeDeleteRecord``: ``existingRecord.isCommitTimeOrderingDelete()`` keeps the existing one); a data record
arriving on a commit-time delete wins; otherwise the newer record wins when its ordering value is ``>=``. A table
that was never compacted holds every write as log records, so its answer is that fold over the whole history — and
a compaction must not change any answer.

"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import UnBoundedCompactionStrategy

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

BASE = 1_700_000_000_000


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
    winning (nothing to carry); one that folds only the first two applies the commit-time delete to the base, after
    which the ts-9 delete is an ordinary one and the ts-7 write loses to it, as after Java's compactor. Each
    compaction leaves the snapshot as it was."""
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
    expected = [(3, 5, 305.0)] if compact_after == 2 else [(1, 7, 107.0), (3, 5, 305.0)]
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
    from evt_toolkit.compaction import EventTimeBasedCompactionStrategy

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
