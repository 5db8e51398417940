"""Smoke run of the benchmark suite at the ``tiny`` size: every result has its fields and sane values.

Timings are not asserted (they depend on the machine and its load); only structure, counts and agreement are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import run as bench_run
from bench.bench_compaction import floor_threads
from bench.common import MIN_REPEAT, SIZES, measure, peak_memory

pytestmark = pytest.mark.slow


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and x > 0


@pytest.fixture(scope="module")
def summary_no_spark(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("bench-out")
    assert bench_run.main(["--size", "tiny", "--only", "B1,B2,B3,B4", "--out", str(out)]) == 0
    data = json.loads((out / "summary_tiny.json").read_text())
    data["_md"] = (out / "summary_tiny.md").read_text()
    return data


def test_summary_header(summary_no_spark: dict[str, Any]) -> None:
    s = summary_no_spark
    assert s["size"] == "tiny"
    for k in ("cores", "memory_gib", "python", "pyarrow", "pyspark", "hudi"):
        assert k in s["machine"]
    assert set(s["results"]) == {"B1", "B2", "B3", "B4"}
    assert {t["benchmark"] for t in s["targets"]} == {"B1", "B2", "B3", "B4"}
    assert "## Targets" in s["_md"] and "Machine:" in s["_md"]
    assert set(s["profiles"]) == {"B1", "B2", "B3", "B4"}


def test_b1(summary_no_spark: dict[str, Any]) -> None:
    b = summary_no_spark["results"]["B1"]
    repeat = SIZES["tiny"]["repeat"]
    assert b["agree"] is True
    assert b["log_files"] == b["table"]["log_files"] > 0
    assert b["blocks"] >= b["log_files"]
    for m in ("header", "scan", "io_floor", "write_stats", "decode"):
        assert _positive(b["methods"][m]["median_s"])
        assert b["methods"][m]["min_s"] <= b["methods"][m]["median_s"] <= b["methods"][m]["max_s"]
        rounds = 3 * repeat if m in ("header", "scan", "io_floor") else repeat
        assert len(b["methods"][m]["all_s"]) == b["methods"][m]["repeats"] == rounds
        assert _positive(b["methods"][m]["bytes_read"])
    for m in ("header", "write_stats", "decode"):
        assert b["methods"][m]["log_files_answered"] > 0
    # The floor reads exactly the non-content bytes; decoding reads the content as well.
    assert b["methods"]["decode"]["bytes_read"] > b["methods"]["io_floor"]["bytes_read"]
    assert b["methods"]["io_floor"]["reads"] >= b["log_files"]
    assert set(b["ratios"]) == {
        "header_s / io_floor_s",
        "header_cpu_s / io_floor_cpu_s",
        "scan_s / io_floor_s",
        "scan_cpu_s / io_floor_cpu_s",
        "decode_s / header_s",
        "decode_s / write_stats_s",
        "decode_bytes / header_bytes",
    }


def test_b2(summary_no_spark: dict[str, Any]) -> None:
    b = summary_no_spark["results"]["B2"]
    sizes = list(SIZES["tiny"]["b2_logs"])
    assert sorted({x["log_files"] for x in b["sizes"]}) == sizes
    assert {x["input"] for x in b["sizes"]} == {"columnar", "objects"}
    for x in b["sizes"]:
        for k in ("build_model_ms", "first_preview_ms", "threshold_change_ms_median", "threshold_change_ms_max"):
            assert x[k] >= 0
        assert x["preview_s_min"] <= x["preview_s"] <= x["preview_s_max"]
        assert x["repeats"] == SIZES["tiny"]["repeat"]
    assert b["largest"]["log_files"] == max(sizes) and b["largest"]["input"] == "columnar"


def test_b3(summary_no_spark: dict[str, Any]) -> None:
    b = summary_no_spark["results"]["B3"]
    p, f, fl = b["partial"], b["full"], b["floor"]
    assert b["repeats"] == SIZES["tiny"]["repeat"]
    assert f["log_files_compacted"] >= p["log_files_compacted"] > 0
    assert f["log_records_in"] >= p["log_records_in"] > 0
    assert p["rows_written"] > 0 and f["rows_written"] > 0
    assert p["bytes_rewritten"] > 0 and f["bytes_rewritten"] > 0
    assert p["bytes_rewritten_if_links_copied"] >= p["bytes_rewritten"]
    for timing in (p, f, fl["partial_plan"], fl["full_plan"]):
        assert 0 < timing["min_s"] <= timing["median_s"] <= timing["max_s"]
        assert len(timing["all_s"]) == b["repeats"]
    for k in ("partial_s / floor_s", "full_s / floor_s", "partial_bytes / full_bytes", "partial_s / full_s"):
        assert _positive(b["ratios"][k])
    for k in ("partial_cpu_s / floor_cpu_s", "full_cpu_s / floor_cpu_s"):
        assert _positive(b["cpu_ratios"][k])
    if b["hudi_rs_read"].get("median_s") is not None:
        assert _positive(b["ratios"]["full_s / hudi_rs_read_s"])
    # The floor gets the compaction's cores; the one-thread floor is reported beside it.
    assert fl["threads"] == floor_threads()
    if fl["threads"] > 1:
        for timing in (fl["one_thread"]["partial_plan"], fl["one_thread"]["full_plan"]):
            assert 0 < timing["min_s"] <= timing["median_s"] <= timing["max_s"]
        assert _positive(b["ratios"]["full_s / one_thread_floor_s"])
        assert "strict floor on one thread, full plan" in summary_no_spark["_md"]
    tasks = b["task_memory"]["full"]
    assert tasks and all(t["slice_input_bytes"] > 0 and t["peak_rss_growth_bytes"] >= 0 for t in tasks)


def test_b4(summary_no_spark: dict[str, Any]) -> None:
    b = summary_no_spark["results"]["B4"]
    assert b["results_equal"] is True
    assert b["ro"]["rows"] == b["snapshot"]["rows"] == b["rows_expected"] > 0
    assert _positive(b["ratios"]["snapshot_s / ro_s"])


def test_b5_without_spark(tmp_path: Path) -> None:
    from bench import b5_reads
    from bench.bench_compaction import _batches, _build

    _build(tmp_path / "src", _batches(2_000, 4, keys=1_000))
    b = b5_reads.run(tmp_path / "src", spark=None, repeat=1)
    assert b["readers"]["python"]["status"] == "ok"
    if "hudi_rs" in b["readers"]:
        assert b["readers"]["hudi_rs"]["rows"] == b["readers"]["python"]["rows"] > 0
        assert b["equal_to_hudi_rs"]["python"] is True
        assert _positive(b["ratios"]["python_s / hudi_rs_s"])


@pytest.mark.spark
def test_b5_spark_and_cluster(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    out = tmp_path / "out"
    assert bench_run.main(["--size", "tiny", "--only", "B5,CLUSTER", "--out", str(out), "--no-profile"]) == 0
    r = json.loads((out / "summary_tiny.json").read_text())["results"]
    assert r["B5"]["readers"]["spark"]["status"] == "ok"
    assert all(r["B5"]["equal_to_hudi_rs"].values())
    c = r["CLUSTER"]
    assert c["identical_base_file_row_counts"] is True and c["identical_snapshot_rows"] is True
    assert c["cluster"]["executors"] >= 1 and c["cluster"]["executor_python_processes"]
    assert c["local"]["records_written"] == c["cluster"]["records_written"] > 0


def test_helpers() -> None:
    m = measure(lambda: sum(range(1000)), repeat=3)
    assert len(m.all_s) == 3 and m.min_s <= m.median_s <= m.max_s and m.result == 499500
    assert m.to_dict()["repeats"] == 3
    assert MIN_REPEAT >= 5 and all(SIZES[k]["repeat"] >= MIN_REPEAT for k in ("small", "medium", "large"))
    with peak_memory() as mem:
        blob = bytearray(32 * 2**20)
        blob[::4096] = b"x" * len(blob[::4096])
    assert mem.rss_peak >= mem.rss_start and mem.method


def test_floor_decodes_every_block_however_it_splits(tmp_path: Path) -> None:
    """The threaded floor decodes exactly the blocks the one-thread floor does (so it is not faster by skipping)."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    import evt_toolkit as evt
    from bench.bench_compaction import _batches, _build, _floor_ops, floor_decode
    from evt_toolkit.compaction import UnBoundedCompactionStrategy
    from evt_toolkit.compaction.schedule import schedule_compaction

    _build(tmp_path / "t", _batches(4_000, 4, keys=1_000))
    t = evt.HudiTable.open(tmp_path / "t")
    c = schedule_compaction(t, UnBoundedCompactionStrategy())
    assert c is not None
    ops = _floor_ops(t, c.instant)
    split = 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        for op in ops:
            one = floor_decode(t.storage, op)
            many = floor_decode(t.storage, op, threads=2, pool=pool, min_chunk=1)
            split += len(many) > len(one)
            assert sum(x.num_rows for x in one) == op.records > 0
            assert pa.concat_tables(many).equals(pa.concat_tables(one))
    assert split == len(ops)


def test_floor_writes_the_bloom_filter_footer(tmp_path: Path) -> None:
    """The strict floor writes what stock Hudi requires of a base file's footer, as the compaction does: the bloom
    filter of the record keys it wrote (in the order written) and their range, in each file group's last file."""
    import pyarrow.parquet as pq

    import evt_toolkit as evt
    from bench.bench_compaction import _batches, _build, _floor_ops, _rows_written, strict_floor
    from evt_toolkit.compaction import UnBoundedCompactionStrategy
    from evt_toolkit.compaction.executor import run_compaction
    from evt_toolkit.compaction.schedule import schedule_compaction
    from evt_toolkit.format.bloom import (
        BLOOM_FILTER_KEY,
        MAX_RECORD_KEY,
        MIN_RECORD_KEY,
        serialize_bloom_filter,
    )

    _build(tmp_path / "t", _batches(4_000, 4, keys=1_000))
    t = evt.HudiTable.open(tmp_path / "t")
    c = schedule_compaction(t, UnBoundedCompactionStrategy())
    assert c is not None
    ops = _floor_ops(t, c.instant)
    written = _rows_written(t, run_compaction(t, c.instant).base_files_written)
    out = tmp_path / "floor"
    strict_floor(t, ops, written, out, threads=2, keep=True)
    for op in ops:
        files = sorted(out.glob(f"{op.file_id}_*.parquet"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
        keys = [k for f in files for k in pq.read_table(f, columns=["_hoodie_record_key"]).column(0).to_pylist()]
        assert len(keys) == written[op.file_id] > 0
        meta = pq.read_metadata(files[-1]).metadata
        assert meta[BLOOM_FILTER_KEY.encode()].decode() == serialize_bloom_filter(keys)
        bounds = (meta[MIN_RECORD_KEY.encode()].decode(), meta[MAX_RECORD_KEY.encode()].decode())
        assert bounds == (min(keys), max(keys))  # ASCII keys: code-point order is Java's
