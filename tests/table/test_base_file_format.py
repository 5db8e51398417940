"""Tables whose base files are not Parquet (``hoodie.table.base.file.format`` = LANCE, ORC, HFILE).

Hudi 1.1 writes Lance base files; this toolkit reads and writes Parquet only. A read that needs such a base file and
every operation that would change such a table are refused with an error naming the table and the format, before
anything is written: a compaction plan scheduled on a Lance table, then run, would otherwise fail half-way (its
base files are not Parquet) and leave an inflight compaction on a table stock writers own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import evt_toolkit as evt
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from tests.tables import create, rows


def _tree(path: Path) -> dict[str, bytes]:
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            p = Path(root) / f
            out[str(p.relative_to(path))] = p.read_bytes()
    return out


def _declare_base_format(path: Path, fmt: str) -> None:
    # hoodie.table.checksum covers the table name only, so a declared format is a one-line change.
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + f"hoodie.table.base.file.format={fmt}\n")


def _table_with_logs(path: Path, version: int) -> evt.HudiTable:
    t = create(path, "commit_time", table_version=version)
    t.write(rows(range(0, 6), 10, 100))
    t.write(rows(range(3, 9), 20, 200))
    return t


@pytest.mark.parametrize("version", [6, 9])
def test_compaction_schedule_on_a_lance_table_is_refused_and_writes_nothing(tmp_path: Path, version: int) -> None:
    path = tmp_path / "t"
    _table_with_logs(path, version)
    _declare_base_format(path, "LANCE")
    before = _tree(path)
    t = evt.HudiTable.open(path)
    with pytest.raises(evt.UnsupportedTableError) as err:
        t.compaction.schedule(UnBoundedCompactionStrategy())
    assert str(path) in str(err.value) and "LANCE" in str(err.value)
    assert _tree(path) == before


def test_running_a_plan_on_a_table_declared_lance_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    """A pending plan (a stock writer's, say) on a Lance table: the run refuses before it marks the plan inflight."""
    path = tmp_path / "t"
    t = _table_with_logs(path, 9)
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    _declare_base_format(path, "LANCE")
    before = _tree(path)
    with pytest.raises(evt.UnsupportedTableError, match="LANCE"):
        evt.HudiTable.open(path).compaction.run(c.instant)
    assert _tree(path) == before


@pytest.mark.parametrize("fmt", ["LANCE", "ORC"])
def test_reading_a_non_parquet_base_file_names_the_table(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "t"
    t = _table_with_logs(path, 9)
    c = t.compaction.schedule(UnBoundedCompactionStrategy())
    assert c is not None
    t.compaction.run(c.instant)
    base = next(path.rglob("*.parquet"))
    base.rename(base.with_suffix("." + fmt.lower()))
    _declare_base_format(path, fmt)
    with pytest.raises(evt.UnsupportedFeatureError) as err:
        evt.HudiTable.open(path).read()
    assert str(path) in str(err.value) and base.with_suffix("." + fmt.lower()).name in str(err.value)
