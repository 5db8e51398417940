"""The new base file's writer: rows written by slicing where they run in stretches equal the rows a gather writes."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evt_toolkit.compaction import merge_task
from evt_toolkit.compaction.merge_task import _ascending_runs, _BaseFileWriter, _slices
from evt_toolkit.storage.fs import TableStorage

EXAMPLES = int(os.environ.get("EVT_PROPERTY_EXAMPLES", "40"))


_SCHEMA = pa.schema([("_hoodie_record_key", pa.string()), ("v", pa.int64())])


def _source(n: int) -> pa.Table:
    half = n // 2

    def rows(lo: int, hi: int) -> pa.Table:
        return pa.table({"_hoodie_record_key": [f"k{i:05d}" for i in range(lo, hi)], "v": range(lo, hi)}, _SCHEMA)

    return pa.concat_tables([rows(0, half), rows(half, n)])  # two chunks: base rows, then log winners


@st.composite
def _positions(draw: st.DrawFn) -> tuple[int, np.ndarray]:
    n = draw(st.integers(1, 400))
    kind = draw(st.sampled_from(["stretches", "any"]))
    if kind == "any":
        idx = draw(st.lists(st.integers(0, n - 1), max_size=300))
    else:  # a few runs of consecutive rows, in any order: what a merge with few deletes produces
        idx = []
        for _ in range(draw(st.integers(0, 4))):
            a = draw(st.integers(0, n - 1))
            b = draw(st.integers(a, n))
            idx += range(a, b)
    return n, np.asarray(idx, dtype=np.int64)


@settings(max_examples=EXAMPLES, deadline=None)
@given(_positions(), st.integers(1, 64))
def test_slices_equal_the_gather(case: tuple[int, np.ndarray], group: int) -> None:
    n, idx = case
    source = _source(n)
    runs = _ascending_runs(idx)
    if runs is None:
        return  # written by a gather
    for start in range(0, len(idx), group):
        stop = min(len(idx), start + group)
        assert _slices(source, idx, runs, start, stop).equals(source.take(pa.array(idx[start:stop])))


def test_runs_only_where_slicing_pays() -> None:
    assert _ascending_runs(np.arange(10_000, dtype=np.int64)) is not None
    scattered = np.random.default_rng(3).permutation(10_000).astype(np.int64)
    assert _ascending_runs(scattered) is None


def test_writer_output_and_key_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether rows are sliced or gathered, the file holds exactly rows ``idx`` in order, with their key bounds."""
    monkeypatch.setattr(merge_task, "ROW_GROUP_ROWS", 7)
    storage = TableStorage.from_uri(str(tmp_path))
    source = _source(100)
    for name, idx in (
        ("sliced.parquet", np.concatenate([np.arange(10, 40), np.arange(60, 95)]).astype(np.int64)),
        ("gathered.parquet", np.random.default_rng(5).permutation(100)[:50].astype(np.int64)),
    ):
        w = _BaseFileWriter(storage, name, source.schema, {"type": "record", "name": "r", "fields": []}, name)
        w.write(source, idx)
        w.close()
        w.commit()
        got = pq.read_table(tmp_path / name)
        assert got.column("v").to_pylist() == idx.tolist()
        keys = [f"k{i:05d}" for i in idx]
        assert (w.lo, w.hi) == (min(keys), max(keys))
        meta = pq.read_metadata(tmp_path / name).metadata
        assert meta[b"hoodie_min_record_key"].decode() == min(keys)
        assert meta[b"hoodie_max_record_key"].decode() == max(keys)
