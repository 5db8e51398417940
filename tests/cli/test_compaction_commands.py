"""``evt preview|schedule|run|validate|unschedule|metrics|compactions``: JSON and text output, exit codes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

import evt_toolkit as evt
from evt_toolkit.cli import main
from evt_toolkit.cli.compaction import parse_duration
from tests.tables import BASE
from tests.tables import event_rows as _rows

T = BASE + 200


@pytest.fixture
def table(tmp_path: Path) -> str:
    t = evt.HudiTable.create(
        tmp_path / "t", "cli", "id", partition_by="region", ordering_field="ts", event_time_field="ev", buckets=2
    )
    t.write(_rows(range(0, 20), 100, 1))
    t.write(_rows(range(10, 30), 400, 2))
    return t.path


def _json(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> Any:
    assert main(argv) == code
    return json.loads(capsys.readouterr().out)


def _text(capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0) -> str:
    assert main(argv) == code
    return capsys.readouterr().out


def test_parse_duration() -> None:
    assert parse_duration("1h") == 3_600_000
    assert parse_duration("30m") == 1_800_000
    assert parse_duration("2d") == 172_800_000
    assert parse_duration("1h30m") == 5_400_000
    assert parse_duration("500ms") == 500
    assert parse_duration("1500") == 1500
    for bad in ("", "1x", "h", "1h foo", "-1h"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_duration(bad)


def test_full_cycle_json(table: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = _json(capsys, ["preview", table, "--threshold", str(T), "--json"])
    assert p["summary"]["threshold_ms"] == T
    assert p["summary"]["slices_selected"] == len(p["slices"]) > 0
    assert all(s["selected"] for s in p["slices"])

    iso = _json(capsys, ["preview", table, "--threshold", "2023-11-14T22:13:20.200Z", "--json"])
    assert iso["summary"]["threshold_ms"] == T
    latency = _json(capsys, ["preview", table, "--data-latency", "1h", "--json"])
    assert latency["summary"]["threshold_ms"] > T  # now − 1h, long after the data
    lateness = _json(capsys, ["preview", table, "--allowed-lateness", "100ms", "--json"])
    assert lateness["summary"]["threshold_ms"] == BASE + 300
    full = _json(capsys, ["preview", table, "--strategy", "log_file_size", "--json"])
    assert full["summary"]["threshold_ms"] is None and full["summary"]["logs_remaining_in_plan"] == 0

    s = _json(capsys, ["schedule", table, "--threshold", str(T), "--json"])
    assert s["scheduled"] and s["threshold_ms"] == T and s["operations"] == p["summary"]["slices_selected"]
    assert s["link_mode"] == "copy" and s["link_timing"] == "schedule"
    assert len(s["links"]) == p["summary"]["links"]
    instant = s["instant"]

    v = _json(capsys, ["validate", table, instant, "--json"])
    assert v["ok"] is True and v["problems"] == []

    r = _json(capsys, ["run", table, instant, "--json"])
    assert r["instant"] == instant and r["operations"] == s["operations"] and r["threshold"] == T
    assert r["records_written"] > 0

    prom = tmp_path / "metrics.prom"
    m = _json(capsys, ["metrics", table, "--json", "--prometheus", str(prom)])
    # Keys 10-19 moved from event time 100 to 400 in the leftover log: their RO rows at 100 are stale, so the
    # freshness that holds exactly is just below them, not the plan's T.
    assert m["ro_freshness_ms"] == BASE + 99 and m["freshness"]["planned_threshold_ms"] == T
    assert m["freshness"]["instant"] == instant
    assert m["freshness"]["serial_rule_held"] is True and m["late_records"] == 0
    assert m["remaining_log_files"] == evt.HudiTable.open(table).metrics().remaining_log_files
    assert "# TYPE evt_hudi_ro_freshness_seconds gauge" in prom.read_text()

    # Nothing left ≤ T: an event-time schedule at T writes no plan.
    assert _json(capsys, ["schedule", table, "--threshold", str(T), "--json"]) == {
        "scheduled": False,
        "reason": "nothing to compact",
    }


def test_unschedule_is_a_dry_run_unless_yes(table: str, capsys: pytest.CaptureFixture[str]) -> None:
    s = _json(capsys, ["schedule", table, "--threshold", str(T), "--link-mode", "copy", "--json"])
    instant = s["instant"]
    dry = _json(capsys, ["unschedule", table, instant, "--json"])
    assert dry["dry_run"] is True and dry["deleted"] is False and dry["files_to_delete"]
    assert [i.time for i in evt.HudiTable.open(table).compaction.pending()] == [instant]

    done = _json(capsys, ["unschedule", table, instant, "--yes", "--json"])
    assert done["deleted"] is True and done["refused_reason"] is None
    assert evt.HudiTable.open(table).compaction.pending() == []


def test_text_mode_renders(table: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _text(capsys, ["preview", table, "--threshold", str(T)])
    assert "threshold T" in out and "Selected file slices" in out

    out = _text(capsys, ["schedule", table, "--data-latency", "1h", "--link-timing", "execute"])
    assert "Scheduled compaction" in out and "created at execute" in out
    instant = evt.HudiTable.open(table).compaction.pending()[0].time

    assert f"OK compaction {instant}" in _text(capsys, ["validate", table, instant])
    out = _text(capsys, ["unschedule", table, instant])
    assert "would delete" in out

    out = _text(capsys, ["run", table, instant])
    assert f"Compaction {instant} completed" in out and "RO freshness" in out and "every event ≤" in out

    out = _text(capsys, ["metrics", table])
    assert "(e) RO freshness T" in out and "(a) min event time" in out


def test_errors_exit_1_usage_errors_exit_2(table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Usage errors (options that do not go together): argparse's usage line and exit code 2.
    assert main(["preview", table]) == 2
    err = capsys.readouterr().err
    assert "usage: evt preview" in err and "--threshold" in err
    assert main(["preview", table, "--strategy", "unbounded", "--threshold", "5"]) == 2
    assert "only applies to --strategy event_time" in capsys.readouterr().err
    assert main(["preview", table, "--data-latency", "soon"]) == 2
    assert "is not a duration" in capsys.readouterr().err

    # Operational errors: one line on stderr, exit code 1.
    assert main(["metrics", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err
    assert "not a Hudi table" in err and err.count("\n") == 1 and "Traceback" not in err
    assert main(["run", table, "20990101000000000"]) == 1
    assert "20990101000000000" in capsys.readouterr().err
