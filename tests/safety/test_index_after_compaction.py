"""A partial compaction must not take a live key out of the base files: SIMPLE (and BLOOM) indexes look keys up there.

Found by the metadata-table model test (:mod:`tests.safety.test_mdt_model`): on a stock v9 table written through the
SIMPLE index, a key is deleted (log 1) and written again (log 2, routed to its file group because the base file still
holds it). An event-time compaction compacts log 1 and leaves log 2: the compacted form merges the base row with the
delete, so the new base file no longer holds the key, which lives on only in the leftover log. The next write of the
key looks it up in the base files, does not find it and inserts it into a new file group: the key is in the table
twice (its stale version resurrected beside the new one), for our writer and for any stock writer with a
base-file index.

The oracle is a plain dict of what was committed; hudi-rs (listing through the metadata table) is checked too.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.carry_over import decide, needs_later_keys
from evt_toolkit.compaction.executor import run_compaction
from tests.conftest import SKIP_NO_SHARED, fixture_table_path
from tests.mdt.mdt_helpers import committed_files, mdt_files
from tests.normalize import assert_same_rows

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

SIMPLE = {"hoodie.index.type": "SIMPLE"}


def _rs(path: str) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())


def _copy(name: str, dst: Path) -> evt.HudiTable:
    shutil.copytree(fixture_table_path(name), dst, symlinks=True)
    for p in [dst, *dst.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o200)
    field = evt.HudiTable.open(dst).config.ordering_field
    props = dst / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + f"hoodie.payload.event.time.field={field}\n")
    return evt.HudiTable.open(dst)


@SKIP_NO_SHARED
@pytest.mark.parametrize("link_mode", ["copy", "symlink"])
@pytest.mark.parametrize(
    ("name", "value"),
    [("mor_v9_txns_simple_meta", "merchant_name"), ("mor_v8_trips_8i3u1d", "rider"), ("mor_table_evo_add_col", "val")],
)
def test_a_key_deleted_and_written_again_across_the_prefix_is_updated_not_duplicated(
    tmp_path: Path, name: str, value: str, link_mode: str
) -> None:
    t = _copy(name, tmp_path / name)
    keys, ordering = list(t.config.record_key_fields), t.config.ordering_field
    assert ordering is not None
    gold = pq.read_table(fixture_table_path(name).parent / "gold_data")
    columns = [c for c in gold.column_names if not c.startswith("_hoodie_")]
    schema = pa.schema([_rs(t.path).schema.field(c) for c in columns])
    oracle: dict[tuple[Any, ...], dict[str, Any]] = {
        tuple(r[k] for k in keys): r for r in gold.select(columns).to_pylist()
    }
    victim = dict(max(oracle.values(), key=lambda r: r[ordering]))
    top = max(r[ordering] for r in oracle.values())

    def write(row: dict[str, Any], op: str, ts: int, tag: str) -> None:
        row = {**row, ordering: ts, value: tag}
        t.write(pa.Table.from_pylist([row], schema=schema), op, options=SIMPLE)
        k = tuple(row[f] for f in keys)
        if op == "delete":
            oracle.pop(k)
        else:
            oracle[k] = row

    write(victim, "delete", top + 10, "deleted")
    write(victim, "upsert", top + 20, "again")
    # Log 1 (the delete, event time top + 10) is compacted; log 2 (top + 20) is left behind.
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=top + 10), link_mode=link_mode)
    assert c is not None and c.links, "a partial compaction with a leftover log"
    t.compaction.run(c)
    write(victim, "upsert", top + 30, "updated")

    expected = pa.Table.from_pylist(list(oracle.values()), schema=schema)
    assert_same_rows(t.refresh().read(), expected, columns, f"{name}: our snapshot vs what was committed")
    assert_same_rows(_rs(t.path), expected, columns, f"{name}: hudi-rs snapshot vs what was committed")
    path = Path(t.path)
    assert mdt_files(path) == committed_files(path)


@pytest.mark.parametrize("event_time_ordering", [False, True])
@pytest.mark.parametrize("later", [["a"], []])
def test_the_decision_keeps_the_base_row_of_a_deleted_key_a_later_log_keeps_alive(
    event_time_ordering: bool, later: list[str]
) -> None:
    """Pure rule (:func:`evt_toolkit.compaction.carry_over.decide`): the prefix's winner deletes base row ``a``; with a
    later record of ``a`` the base row stays and the delete is carried, without one the base row goes."""
    winners = pa.table(
        {
            "key": ["a"],
            "is_delete": [True],
            "ct_delete": [False],
            "src": pa.array([1], pa.int8()),
            "idx": pa.array([0], pa.int64()),
        }
    )
    assert needs_later_keys(winners, np.array([True]))
    d = decide(
        base_keys=pa.array(["a", "b"]),
        keep_base=pa.array([False, True]),
        winners=winners,
        emitted_idx=pa.array([], pa.int64()),
        event_time_ordering=event_time_ordering,
        later_keys=pa.array(later, pa.string()),
        later_ct_keys=pa.array([], pa.string()),
    )
    if later:
        assert d.keep_base.tolist() == [True, True] and d.kept == 1
        assert d.carry_delete_winner_pos.tolist() == [0] and d.tombstones == 0
    else:
        assert d.keep_base.tolist() == [False, True] and d.kept == 0
        assert d.ct_sensitive_keys == ("a",), "a record of 'a' landing during the run makes the task run again"


@SKIP_NO_SHARED
@pytest.mark.parametrize(
    ("name", "value"),
    [("mor_v9_txns_simple_meta", "merchant_name"), ("mor_v8_trips_8i3u1d", "rider"), ("mor_table_evo_add_col", "val")],
)
def test_a_key_written_again_while_the_compaction_runs_is_updated_not_duplicated(
    tmp_path: Path, name: str, value: str
) -> None:
    """The same, with the second write landing in the new slice while the run is under way (after its task read the
    slice, before ``C`` completes): the driver sees it before committing and the task runs again, in either
    ordering."""
    t = _copy(name, tmp_path / name)
    keys, ordering = list(t.config.record_key_fields), t.config.ordering_field
    assert ordering is not None
    gold = pq.read_table(fixture_table_path(name).parent / "gold_data")
    columns = [c for c in gold.column_names if not c.startswith("_hoodie_")]
    schema = pa.schema([_rs(t.path).schema.field(c) for c in columns])
    oracle = {tuple(r[k] for k in keys): r for r in gold.select(columns).to_pylist()}
    victim = dict(max(oracle.values(), key=lambda r: r[ordering]))
    top = max(r[ordering] for r in oracle.values())

    def write(table: evt.HudiTable, row: dict[str, Any], op: str, ts: int, tag: str) -> None:
        row = {**row, ordering: ts, value: tag}
        table.write(pa.Table.from_pylist([row], schema=schema), op, options=SIMPLE)
        k = tuple(row[f] for f in keys)
        if op == "delete":
            oracle.pop(k)
        else:
            oracle[k] = row

    write(t, victim, "delete", top + 10, "deleted")
    c = t.compaction.schedule(EventTimeBasedCompactionStrategy(threshold=top + 10))
    assert c is not None
    landed: list[bool] = []

    def land(task: Any, stage: str) -> None:
        if stage == "written" and not landed:
            landed.append(True)
            write(evt.HudiTable.open(t.path), victim, "upsert", top + 20, "again")

    run_compaction(t, c.instant, fault_hook=land)
    assert landed
    write(t, victim, "upsert", top + 30, "updated")

    expected = pa.Table.from_pylist(list(oracle.values()), schema=schema)
    assert_same_rows(t.refresh().read(), expected, columns, f"{name}: our snapshot vs what was committed")
    assert_same_rows(_rs(t.path), expected, columns, f"{name}: hudi-rs snapshot vs what was committed")
