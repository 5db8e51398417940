"""RO freshness, late data and the RFC metrics on tables compacted for real (schedule + run, no Spark)."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pyarrow.compute as pc
import pytest

import evt_toolkit as evt
from evt_toolkit.api import HISTORY_SCHEMA
from evt_toolkit.compaction.freshness import ServiceWindow, completed_compactions, overlapping, table_service_windows
from evt_toolkit.compaction.metrics import METRICS_SCHEMA
from evt_toolkit.compaction.strategy import EventTimeBasedCompactionStrategy, UnBoundedCompactionStrategy
from evt_toolkit.format.names import InstantFileName
from evt_toolkit.write.instants import step_instant
from tests.tables import BASE
from tests.tables import event_rows as _rows

T = BASE + 200


def _table(path: Path) -> evt.HudiTable:
    t = evt.HudiTable.create(
        path, "fm", "id", partition_by="region", ordering_field="ts", event_time_field="ev", buckets=2
    )
    t.write(_rows(range(0, 20), 100))
    t.write(_rows(range(10, 30), 150, ts=2))
    t.write(_rows(range(25, 40), 400, ts=3))
    return t


def _strategy() -> EventTimeBasedCompactionStrategy:
    return EventTimeBasedCompactionStrategy(threshold=T)


def test_no_compaction_means_no_freshness(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    f = t.ro_freshness()
    assert f.threshold_ms is None and f.instant is None and not f.fresh
    assert "no compaction has completed" in (f.reason or "")
    assert t.metrics().ro_freshness_ms is None


def test_freshness_after_compaction_counts_late_data_exactly(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    c = t.compaction.schedule(_strategy())
    assert c is not None and c.threshold == T
    # Written while the plan is pending: 5 events ≤ T (late) and 2 events > T (not late).
    t.write(_rows([40, 41, 42, 43, 44, 45, 46], [50, 60, 70, 80, 200, 900, 901], ts=4))
    t.compaction.run(c)

    f = t.ro_freshness(now_ms=T + 60_000)
    # The late record at 50 is only in a log: the RO view holds every event up to 49 exactly, not up to T.
    assert f.threshold_ms == BASE + 49 and f.planned_threshold_ms == T
    assert f.instant == c.instant and f.serial_rule_held
    assert f.lag_ms == T + 60_000 - (BASE + 49) and f.reason is not None and "lowered" in f.reason
    assert f.late_records == 5
    assert f.unexpected_records == 0
    assert f.late_log_files and all(os.path.basename(p).startswith(".") for p in f.late_log_files)
    assert f.completed_at is not None

    # Late data after completion is counted too, and logs with only events > T are not.
    t.write(_rows([50, 51, 52], 10, ts=5))
    t.write(_rows([53], 5000, ts=6))
    f2 = t.refresh().ro_freshness()
    assert f2.late_records == 8
    assert f2.threshold_ms == BASE + 9 and f2.planned_threshold_ms == T

    # Every log named as late really holds events ≤ T written after C was scheduled.
    blocks = t.inspect.log_blocks()
    late_names = {os.path.basename(p) for p in f2.late_log_files}
    named = blocks.filter(pc.is_in(blocks.column("log_file"), pc.cast(list(late_names), "string")))
    assert all(i > c.instant for i in named.column("instant_time").to_pylist() if i is not None)


def test_metrics_equal_independent_recomputation(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    c = t.compaction.schedule(_strategy())
    assert c is not None
    t.compaction.run(c)
    t.write(_rows([60, 61], 30, ts=7))

    m = t.metrics(now_ms=T + 1000)
    slices = t.file_slices()
    with_logs = slices.filter(pc.greater(slices.column("num_log_files"), 0))
    assert m.slices_with_remaining_logs == with_logs.num_rows
    assert m.remaining_log_bytes == pc.sum(with_logs.column("total_log_size")).as_py()
    assert m.remaining_log_files == pc.sum(with_logs.column("num_log_files")).as_py()
    assert m.slices_total == slices.num_rows

    names = {n for logs in with_logs.column("log_files").to_pylist() for n in logs}
    blocks = t.inspect.log_blocks()
    mins = [
        r["min_event_time"]
        for r in blocks.to_pylist()
        if r["log_file"] in names and r["committed"] and r["block_type"].endswith("_DATA") and r["min_event_time"]
    ]
    assert m.min_remaining_event_time_ms == min(mins) == BASE + 30
    # Late records at 30 are only in logs: freshness 29 (keys 25-29 moved from 150 to 400 would lower it to 149).
    assert m.ro_freshness_ms == BASE + 29 and m.freshness_lag_ms == T + 1000 - (BASE + 29)
    assert m.late_records == 2
    assert m.pending_compactions == 0 and m.last_event_time_compaction == c.instant

    row = m.as_arrow()
    assert row.schema == METRICS_SCHEMA and row.num_rows == 1
    assert row.to_pylist()[0] == m.as_dict()


# Prometheus text exposition format 0.0.4: comments, then "name{labels} value" samples.
_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABELS = (
    r'\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*\}'
)
_VALUE = r"(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|NaN|[+-]Inf)"
_SAMPLE = re.compile(rf"^({_NAME})({_LABELS})? {_VALUE}$")
_HELP = re.compile(rf"^# HELP ({_NAME}) (.*)$")
_TYPE = re.compile(rf"^# TYPE ({_NAME}) (counter|gauge|histogram|summary|untyped)$")


def _parse_prometheus(text: str) -> dict[str, float]:
    assert text.endswith("\n")
    helped: set[str] = set()
    typed: set[str] = set()
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if m := _HELP.match(line):
            helped.add(m.group(1))
        elif m := _TYPE.match(line):
            typed.add(m.group(1))
        else:
            m = _SAMPLE.match(line)
            assert m is not None, f"not a valid exposition line: {line!r}"
            name = m.group(1)
            assert name in helped and name in typed, f"{name} sampled before its HELP/TYPE lines"
            assert m.group(2) == '{table="fm"}'
            samples[name] = float(line.rsplit(" ", 1)[1])
    return samples


def test_prometheus_text_parses_and_is_written_atomically(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    c = t.compaction.schedule(_strategy())
    assert c is not None
    t.compaction.run(c)
    m = t.metrics(now_ms=T + 5000)
    text = m.to_prometheus()
    samples = _parse_prometheus(text)
    # Keys 25-29 moved from event time 150 to 400 in the leftover log: the exact freshness is just below 150.
    assert samples["evt_hudi_ro_freshness_seconds"] == (BASE + 149) / 1000
    assert samples["evt_hudi_ro_freshness_lag_seconds"] == (T + 5000 - (BASE + 149)) / 1000
    assert samples["evt_hudi_remaining_log_files"] == m.remaining_log_files
    assert samples["evt_hudi_file_slices_with_remaining_logs"] == m.slices_with_remaining_logs
    assert samples["evt_hudi_remaining_log_bytes"] == m.remaining_log_bytes
    assert samples["evt_hudi_remaining_logs_min_event_time_seconds"] == m.min_remaining_event_time_ms / 1000  # type: ignore[operator]
    assert samples["evt_hudi_late_records"] == 0

    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        pass
    else:
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert families["evt_hudi_remaining_log_files"].type == "gauge"

    out = tmp_path / "prom" / "fm.prom"
    m.write_prometheus(out)
    assert out.read_text() == text
    assert os.listdir(out.parent) == ["fm.prom"]  # no temp file left behind

    # Unknown figures are NaN, so the series stays present; a custom prefix renames every metric.
    empty = _table(tmp_path / "e").metrics()
    nan_samples = _parse_prometheus(empty.to_prometheus())
    assert math.isnan(nan_samples["evt_hudi_ro_freshness_seconds"])
    assert all(line.startswith(("# HELP x_", "# TYPE x_", "x_")) for line in empty.to_prometheus("x_").splitlines())


def test_serial_rule_broken_withholds_freshness(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    c = t.compaction.schedule(_strategy())
    assert c is not None
    # A clustering scheduled by another writer while C is pending (stock Hudi would not stop it).
    x = step_instant(c.instant)
    name = InstantFileName(x, "replacecommit", "REQUESTED").name
    (tmp_path / "t" / ".hoodie" / name).write_bytes(b"")
    t.compaction.run(c)

    f = t.refresh().ro_freshness()
    assert f.threshold_ms is None and not f.serial_rule_held
    assert f.instant == c.instant and f.planned_threshold_ms == T
    assert f.overlapping == (x,)
    assert "serial rule" in (f.reason or "") and x in (f.reason or "")
    windows = {w.instant: w for w in table_service_windows(t)}
    assert windows[x].end is None and windows[c.instant].end is not None
    m = t.metrics()
    assert m.ro_freshness_ms is None and not m.serial_rule_held and m.freshness_reason == f.reason


def test_later_full_compaction_keeps_event_time_freshness(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    c = t.compaction.schedule(_strategy())
    assert c is not None
    t.compaction.run(c)
    t.write(_rows([70, 71], 20, ts=8))
    full = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert full is not None
    t.compaction.run(full)

    f = t.ro_freshness()
    # A compaction of another strategy only moves records from logs into base files: T still holds, and the
    # late records it compacted are in the RO view now.
    assert f.threshold_ms == T and f.instant == c.instant and f.serial_rule_held
    assert f.late_records == 0
    m = t.metrics()
    assert m.remaining_log_files == 0 and m.slices_with_remaining_logs == 0 and m.min_remaining_event_time_ms is None

    history = t.compaction.history()
    assert history.schema == HISTORY_SCHEMA
    rows = history.to_pylist()
    assert [r["instant"] for r in rows] == [c.instant, full.instant]
    assert rows[0]["threshold_ms"] == T and rows[1]["threshold_ms"] is None
    assert rows[0]["link_mode"] == "copy" and rows[0]["operations"] == c.operations
    assert all(r["bytes_written"] > 0 and r["records_written"] > 0 for r in rows)
    assert [r.instant for r in completed_compactions(t)] == [c.instant, full.instant]


def test_only_other_strategies_give_no_freshness(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    full = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert full is not None
    assert [i.time for i in t.compaction.pending()] == [full.instant]
    t.compaction.run(full)
    assert t.compaction.pending() == []
    f = t.ro_freshness()
    assert f.threshold_ms is None and "event-time threshold" in (f.reason or "")


@pytest.mark.parametrize("link_timing", ["schedule", "execute"])
def test_pending_plan_links_are_not_counted_twice(tmp_path: Path, link_timing: str) -> None:
    t = _table(tmp_path / "t")
    before = t.metrics()
    c = t.compaction.schedule(_strategy(), link_timing=link_timing)
    assert c is not None and c.links
    during = t.metrics()
    # While the plan is pending nothing is compacted yet: the same logs remain, links or not.
    assert during.remaining_log_files == before.remaining_log_files
    assert during.remaining_log_bytes == before.remaining_log_bytes
    assert during.min_remaining_event_time_ms == before.min_remaining_event_time_ms == BASE + 100
    assert during.pending_compactions == 1

    preview = t.compaction.preview(_strategy())
    assert preview.summary.ro_freshness_ms is None  # a compaction is pending: no promise


def test_overlap_of_pending_windows() -> None:
    c = ServiceWindow("20250101000000200", "compaction", "20250101000000200", "20250101000000500")
    windows = [
        ServiceWindow("20250101000000100", "clustering", "20250101000000100", "20250101000000200"),  # ends as C starts
        ServiceWindow("20250101000000150", "compaction", "20250101000000150", "20250101000000300"),  # straddles start
        ServiceWindow("20250101000000300", "logcompaction", "20250101000000300", None),  # still pending
        ServiceWindow("20250101000000500", "compaction", "20250101000000500", None),  # scheduled as C completed
        ServiceWindow("20250101000000050", "clustering", "20250101000000050", None),  # pending since before C
        c,
    ]
    assert [w.instant for w in overlapping(windows, c)] == [
        "20250101000000150",
        "20250101000000300",
        "20250101000000050",
    ]
