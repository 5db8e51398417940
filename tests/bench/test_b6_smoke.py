"""Smoke run of B6 (tables on S3 behind a delaying proxy) at the ``tiny`` size: structure and request shapes.

Wall times are not asserted; request shapes are (they do not depend on the machine's speed).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_b6_tiny() -> None:
    pytest.importorskip("moto")
    pytest.importorskip("hudi")
    from bench.b6_object_store import run, to_markdown

    r = run("tiny", latency_ms=2.0, repeats=1)
    assert r["table"]["log_files"] == 30 and r["table"]["base_files"] == 6
    assert r["snapshot"]["rows"][0] == r["snapshot"]["rows"][1] == r["table"]["rows"]
    assert r["header_scan"]["log_file_requests_per_log_file"] <= 1.0
    assert r["upsert"]["client_counts"]["copy"] == 0 and r["upsert"]["client_counts"]["delete"] == 0
    assert r["copy_links"]["links"] > 0 and r["copy_links"]["copy_requests"] == r["copy_links"]["links"]
    assert r["copy_links"]["fraction_through_client"] <= 0.05
    assert r["preview"]["log_files"] > 100
    assert {t["target"].split(":")[0] for t in r["targets"]} >= {"header scan", "snapshot read / hudi-rs wall time"}
    assert "## Targets" in to_markdown(r)
