"""Smoke run of ``bench.task_memory`` on a 2 MiB slice: fresh task processes report their peak, and a 1 MiB budget
makes the task spill (timings and memory figures are not asserted: they depend on the machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import task_memory

pytestmark = pytest.mark.slow


def test_task_memory_smoke(tmp_path: Path) -> None:
    res = task_memory.run(tmp_path, [2], [None, 1 << 20], limit_as=None, repeat=1)
    (table,) = res["tables"]
    assert table["slice_bytes"] >= 2 << 20
    assert table["rows"] > 10_000
    plain, tight = table["runs"]
    for entry in (plain, tight):
        (run,) = entry["runs"]
        assert "failed" not in run, run
        # A write keeps one record per key of each batch, so the logs hold at most the rows ingested.
        assert 0 < run["rows_written"] <= run["log_records"] <= table["rows"]
        assert run["peak_rss_growth_bytes"] >= 0 and run["method"]
    assert plain["runs"][0]["spilled_partitions"] == 0
    assert tight["runs"][0]["spilled_partitions"] >= 2
    # The same merge either way: spilling changes where the key state lives, not the rows written.
    assert plain["runs"][0]["rows_written"] == tight["runs"][0]["rows_written"]
    assert plain["runs"][0]["log_records"] == tight["runs"][0]["log_records"]
    md = task_memory.to_markdown(res)
    assert "| 1 MiB |" in md and "| default |" in md
