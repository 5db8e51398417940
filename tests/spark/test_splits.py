"""Packing planned slices into Spark input partitions: Spark's ``FilePartition.getFilePartitions`` rule.

Worked by hand from Spark's code: ``maxSplitBytes = min(maxPartitionBytes, max(openCost, total / minPartitions))``
with every slice counting ``openCost`` on top of its bytes; slices sorted by bytes, largest first, then "next fit".
The reader Spark pickles into each task carries no plan.
"""

from __future__ import annotations

import pickle

import pytest

from evt_toolkit.errors import ReadError
from evt_toolkit.read.plan import SliceRead
from evt_toolkit.spark.splits import SplitConf, byte_string_as_bytes, pack_slice_reads, read_bytes
from evt_toolkit.table.fs_view import BaseFile, FileSlice, LogFile

MiB = 1 << 20


def _read(fid: str, base: int | None, logs: tuple[int, ...] = (), base_only: bool = False) -> SliceRead:
    b = BaseFile(f"p/{fid}.parquet", f"{fid}.parquet", fid, "1", "0-0-0", base) if base is not None else None
    lfs = tuple(
        LogFile(f"p/.{fid}.log.{i}", f".{fid}.log.{i}", fid, "1", i, "0-0-0", "", n) for i, n in enumerate(logs)
    )
    return SliceRead(FileSlice("p", fid, "1", b, lfs), base_only, None)


def _ids(groups: list[tuple[SliceRead, ...]]) -> list[list[str]]:
    return [[r.file_slice.file_id for r in g] for g in groups]


def test_bytes_of_a_read_are_what_it_fetches() -> None:
    assert read_bytes(_read("a", 10, (3, 4))) == 17
    assert read_bytes(_read("a", 10, (3, 4), base_only=True)) == 10
    assert read_bytes(_read("a", None, (3, 4))) == 7


def test_small_table_is_spread_over_the_default_parallelism() -> None:
    # 8 slices of 2 MiB + 4 MiB open cost = 48 MiB; 2 cores -> 24 MiB splits -> 4 slices (24 MiB) per partition.
    reads = [_read(str(i), 2 * MiB) for i in range(8)]
    groups = pack_slice_reads(reads, SplitConf(min_partitions=2))
    assert _ids(groups) == [["0", "1", "2", "3"], ["4", "5", "6", "7"]]
    assert len(pack_slice_reads(reads, SplitConf(min_partitions=4))) == 4
    assert len(pack_slice_reads(reads, SplitConf(min_partitions=1))) == 1


def test_largest_first_next_fit_and_the_partition_byte_cap() -> None:
    # Total 60+40+30+10+4x4 = 156 MiB over 1 core -> maxSplitBytes = maxPartitionBytes = 64 MiB.
    reads = [
        _read("s10", 10 * MiB),
        _read("s60", 50 * MiB, (10 * MiB,)),
        _read("s30", 30 * MiB),
        _read("s40", 40 * MiB),
    ]
    groups = pack_slice_reads(reads, SplitConf(max_partition_bytes=64 * MiB, min_partitions=1))
    # s60 (64 counted) closes at s40; s40 (44 counted) + 30 > 64 closes; s30 (34) + 10 <= 64 joins.
    assert _ids(groups) == [["s60"], ["s40"], ["s30", "s10"]]


def test_max_partition_num_rescales_the_splits() -> None:
    reads = [_read(str(i), 8 * MiB) for i in range(10)]
    conf = SplitConf(max_partition_bytes=12 * MiB, min_partitions=2)
    assert len(pack_slice_reads(reads, conf)) == 10
    rescaled = pack_slice_reads(reads, SplitConf(max_partition_bytes=12 * MiB, min_partitions=2, max_partitions=3))
    # Spark re-packs with ceil(total / maxPartitionNum) = ceil(120 MiB / 3) = 40 MiB splits: three 12 MiB slices fit,
    # a fourth would not (36 + 8 > 40) -- next fit can still leave more partitions than the cap, as in Spark.
    assert [len(g) for g in rescaled] == [3, 3, 3, 1]


@pytest.mark.parametrize("sizes", [[], [0], [1, 0, 5], [7] * 33, [2**40, 1, 2**20, 3]])
@pytest.mark.parametrize(
    "conf", [SplitConf(), SplitConf(min_partitions=3), SplitConf(1, 1, 1, None), SplitConf(max_partitions=2)]
)
def test_every_slice_lands_in_exactly_one_partition(sizes: list[int], conf: SplitConf) -> None:
    reads = [_read(str(i), n) for i, n in enumerate(sizes)]
    groups = pack_slice_reads(reads, conf)
    assert all(groups)
    assert sorted(r.file_slice.file_id for g in groups for r in g) == sorted(str(i) for i in range(len(sizes)))


def test_spark_byte_strings() -> None:
    assert byte_string_as_bytes("134217728b") == 128 * MiB
    assert byte_string_as_bytes("128m") == byte_string_as_bytes("128MB") == 128 * MiB
    assert byte_string_as_bytes(" 4194304 ") == 4 * MiB
    assert byte_string_as_bytes("1g") == 1024 * MiB
    for bad in ("", "1.5m", "12q", "-3"):
        with pytest.raises(ReadError, match="not a Spark byte size"):
            byte_string_as_bytes(bad)


def test_the_reader_shipped_to_tasks_carries_no_plan(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")
    import pandas as pd
    from pyspark import cloudpickle

    import evt_toolkit as evt
    from evt_toolkit.read.plan import ReadSpec
    from evt_toolkit.spark.datasource import HudiEvtReader, ReadOptions
    from evt_toolkit.spark.types import spark_schema_for

    t = evt.HudiTable.create(tmp_path / "t", "t", "id", partition_by="region", ordering_field="ts", buckets=4)
    t.write(pd.DataFrame({"id": range(40), "region": [f"r{i % 4}" for i in range(40)], "ts": [1] * 40}))
    schema = spark_schema_for(ReadSpec.of(t).schema)
    reader = HudiEvtReader(ReadOptions.from_options({"path": str(tmp_path / "t")}), schema, SplitConf(min_partitions=1))
    assert reader.reads is not None and len(reader.reads) == 16
    assert len(reader.partitions()) == 1
    shipped = cloudpickle.loads(cloudpickle.dumps(reader))
    assert shipped.reads is None and shipped.pruner is None
    assert shipped.spec.schema == reader.spec.schema and shipped.batch_schema == reader.batch_schema
    assert shipped.spec.timeline.instants == reader.spec.timeline.instants  # what tasks need to merge blocks
    with pytest.raises(ReadError, match="shipped to a task"):
        shipped.partitions()
    # The driver's own reader is untouched by pickling it.
    assert reader.reads is not None and len(reader.partitions()) == 1
    # Plain pickle too (Spark may use either).
    assert pickle.loads(pickle.dumps(reader)).reads is None
