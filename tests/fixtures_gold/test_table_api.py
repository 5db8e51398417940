"""The public table API on real Hudi tables: errors, time travel, damaged files, inspect, CLI."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.cli import main as cli_main
from tests.conftest import SKIP_NO_SHARED, TABLES_DIR, fixture_names, fixture_table_path
from tests.normalize import assert_same_rows

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

pytestmark = [SKIP_NO_SHARED, pytest.mark.fixtures]

TRIPS_V6 = "mor_v6_trips_8i1u"


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(fixture_table_path(name), dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def _only_log(table_dir: Path) -> Path:
    logs = sorted(p for p in table_dir.rglob(".*.log.*"))
    assert len(logs) == 1, logs
    return logs[0]


# -- errors -------------------------------------------------------------------------------------------


def test_open_non_table_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(evt.TableConfigError, match=r"hoodie\.properties"):
        evt.HudiTable.open(tmp_path)


def test_wrong_checksum_is_refused(tmp_path: Path) -> None:
    d = _copy(TRIPS_V6, tmp_path)
    props = d / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    assert "hoodie.table.checksum=3843273058" in text
    props.write_text(text.replace("hoodie.table.checksum=3843273058", "hoodie.table.checksum=12345"))
    with pytest.raises(evt.TableConfigError, match="checksum"):
        evt.HudiTable.open(d)


def test_bad_query_arguments() -> None:
    t = evt.HudiTable.open(fixture_table_path(TRIPS_V6))
    with pytest.raises(evt.ReadError, match="query type"):
        t.read("latest")
    with pytest.raises(evt.ReadError, match="unknown column"):
        t.read(columns=["uuid", "no_such_column"])
    with pytest.raises(evt.ReadError, match="instant"):
        t.read(as_of="yesterday")


# -- time travel: every completed commit of every fixture, against hudi-rs ------------------------------------------


def _time_travel_cases() -> list[tuple[str, str]]:
    cases = []
    for name in fixture_names():
        if "lance" in name or "hfile" in name or not (TABLES_DIR / name / "gold_data").is_dir():
            continue
        t = evt.HudiTable.open(fixture_table_path(name))
        for inst in t.timeline.completed_commits():
            cases.append((name, inst.time))
    return cases


@pytest.mark.parametrize(("name", "instant"), _time_travel_cases())
def test_time_travel_equals_hudi_rs(name: str, instant: str) -> None:
    path = str(fixture_table_path(name).resolve())
    rs = hudi.HudiTableBuilder.from_base_uri(path).build()
    expected = pa.Table.from_batches(rs.read(hudi.HudiReadOptions().with_as_of_timestamp(instant)))
    t = evt.HudiTable.open(path)
    pending = [i.time for i in t.timeline.inflight_writes()]
    if any(p <= instant for p in pending):
        # Spark refuses time travel at or after a write that has not completed (validateTimestampAsOf); hudi-rs
        # answers without it.
        with pytest.raises(evt.ReadError, match=min(pending)):
            t.read(as_of=instant)
        return
    ours = t.read(as_of=instant)
    if expected.num_rows == 0:
        assert ours.num_rows == 0
        return
    assert_same_rows(ours, expected, what=f"{name} as of {instant}")


def test_time_travel_sees_the_past() -> None:
    t = evt.HudiTable.open(fixture_table_path(TRIPS_V6))
    first, last = (i.time for i in t.timeline.completed_commits())
    before = t.read(as_of=first).to_pylist()
    after = t.read(as_of=last).to_pylist()
    assert t.read().to_pylist() == after
    changed = {r["uuid"] for r in after} & {r["uuid"] for r in before}
    diff = [r for r in after if r["_hoodie_commit_time"] == last]
    assert len(diff) == 1 and diff[0]["uuid"] in changed  # the one upsert of the second deltacommit
    assert all(r["_hoodie_commit_time"] == first for r in before)


# -- damaged files ----------------------------------------------------------------------------------------------------


def test_truncated_log_is_a_reported_corrupt_block_and_the_table_stays_readable(tmp_path: Path) -> None:
    d = _copy(TRIPS_V6, tmp_path)
    log = _only_log(d)
    log.write_bytes(log.read_bytes()[:700])
    t = evt.HudiTable.open(d)
    blocks = t.inspect.log_blocks().to_pylist()
    assert [b["block_type"] for b in blocks] == ["CORRUPT"]
    assert blocks[0]["corrupt_reason"]
    # The update in the damaged block is gone; everything else reads as the base files say.
    assert_same_rows(t.read(), t.read("read_optimized"), what="truncated log")


def test_unknown_header_ordinal_names_file_and_offset(tmp_path: Path) -> None:
    d = _copy(TRIPS_V6, tmp_path)
    log = _only_log(d)
    data = bytearray(log.read_bytes())
    # Block layout: magic(6) size(8) version(4) type(4) header-count(4) then the first key ordinal (int32).
    first_key_at = 6 + 8 + 4 + 4 + 4
    data[first_key_at : first_key_at + 4] = struct.pack(">i", 42)
    log.write_bytes(bytes(data))
    with pytest.raises(evt.LogFormatError) as info:
        evt.HudiTable.open(d).read()
    assert log.name in str(info.value)
    assert "42" in str(info.value)


def test_damaged_base_file_is_an_error_naming_it(tmp_path: Path) -> None:
    d = _copy(TRIPS_V6, tmp_path)
    victim = evt.HudiTable.open(d).view.latest_base_files()[0]
    (d / victim.path).write_bytes(b"not parquet at all")
    with pytest.raises(evt.ReadError, match=victim.name):
        evt.HudiTable.open(d).read()


def test_base_file_deleted_after_listing_is_a_storage_error(tmp_path: Path) -> None:
    d = _copy(TRIPS_V6, tmp_path)
    t = evt.HudiTable.open(d)
    victim = t.view.latest_base_files()[0]  # the listing is taken here
    (d / victim.path).unlink()  # a cleaner removes it before the read
    with pytest.raises(evt.StorageError, match=victim.name):
        t.read()


# -- inspect -----------------------------------------------------------------------------------------------------------


def test_inspect_reports_uncommitted_blocks() -> None:
    t = evt.HudiTable.open(fixture_table_path("mor_table_uncommitted_log_v6"))
    blocks = t.inspect.log_blocks().to_pylist()
    pending = {i.time for i in t.timeline.inflight_writes()}
    assert pending
    flags = {b["instant_time"]: b["committed"] for b in blocks}
    assert any(inst in pending and flag is False for inst, flag in flags.items())
    assert any(flag is True for flag in flags.values())


def test_inspect_min_event_time_is_scanned_on_stock_tables() -> None:
    t = evt.HudiTable.open(fixture_table_path(TRIPS_V6))
    blocks = t.inspect.log_blocks(event_time_field="ts").to_pylist()
    assert len(blocks) == 1
    (b,) = blocks
    assert b["min_event_time_source"] == "scan"
    log_rows = t.read().filter(pa.compute.equal(t.read()["_hoodie_commit_time"], b["instant_time"]))
    assert b["min_event_time"] == min(log_rows["ts"].to_pylist())
    assert b["record_count"] == 1
    assert dict(b["header"])["INSTANT_TIME"] == b["instant_time"]


def test_inspect_without_event_time_field_reports_no_source() -> None:
    t = evt.HudiTable.open(fixture_table_path(TRIPS_V6))
    blocks = t.inspect.log_blocks().to_pylist()
    assert blocks[0]["min_event_time"] is None and blocks[0]["min_event_time_source"] is None


# -- CLI ---------------------------------------------------------------------------------------------------------


def test_cli_inspect_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["inspect", str(fixture_table_path(TRIPS_V6)), "--event-time-field", "ts", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["table"]["version"] == 6
    assert [i["action"] for i in out["timeline"]] == ["deltacommit", "deltacommit"]
    assert len(out["file_slices"]) == 3
    assert out["log_blocks"][0]["min_event_time_source"] == "scan"


def test_cli_inspect_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["inspect", str(fixture_table_path("mor_v8_trips_8i3u1d"))]) == 0
    text = capsys.readouterr().out
    assert "Timeline" in text and "Latest file slices" in text and "Log blocks" in text
    assert "deltacommit" in text and "COMPLETED" in text


def test_cli_error_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["inspect", str(tmp_path)]) == 1  # an operational error; 2 is for usage errors
    assert "TableConfigError" in capsys.readouterr().err


# -- tables without meta fields -------------------------------------------------------------------------------------


def test_table_without_meta_fields_merges_on_derived_keys(tmp_path: Path) -> None:
    """``hoodie.populate.meta.fields=false``: keys come from the record key fields (here ``uuid``)."""
    d = _copy(TRIPS_V6, tmp_path)
    props = d / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.populate.meta.fields=false\n")
    t = evt.HudiTable.open(d)
    assert t.config.populate_meta_fields is False
    ours = t.read()
    assert "_hoodie_record_key" not in ours.column_names
    gold = evt.HudiTable.open(fixture_table_path(TRIPS_V6)).read()
    data_cols = [c for c in gold.column_names if not c.startswith("_hoodie_")]
    assert ours.column_names == data_cols
    assert_same_rows(ours, gold, columns=data_cols, what="no meta fields")
    # The update in the log replaced the base row instead of being appended next to it.
    assert ours.num_rows == gold.num_rows == len(set(ours["uuid"].to_pylist()))
