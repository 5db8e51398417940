"""Tables written with ``hoodie.populate.meta.fields=false``: they read (keys derived from the record key fields),
but the toolkit does not compact them — and says so before it writes a plan or marks one inflight.

The compaction task always refused such a table, but only once the plan was written and inflight, so a schedule
left a plan that could never run, and a run left a stock writer's plan inflight.
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


def _without_meta_fields(path: Path) -> None:
    props = path / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    if "hoodie.populate.meta.fields=" in text:
        text = text.replace("hoodie.populate.meta.fields=true", "hoodie.populate.meta.fields=false")
    else:
        text += "hoodie.populate.meta.fields=false\n"
    props.write_text(text)


def _table_with_logs(path: Path, version: int) -> evt.HudiTable:
    t = create(path, "commit_time", table_version=version)
    t.write(rows(range(0, 6), 10, 100))
    t.write(rows(range(3, 9), 20, 200))
    return t


@pytest.mark.parametrize("version", [6, 9])
def test_schedule_refuses_a_table_without_meta_fields_before_writing_a_plan(tmp_path: Path, version: int) -> None:
    path = tmp_path / "t"
    _table_with_logs(path, version)
    _without_meta_fields(path)
    t = evt.HudiTable.open(path)
    assert t.read().num_rows == 9, "the table reads, its keys derived from the record key field"
    before = _tree(path)
    with pytest.raises(evt.UnsupportedTableError) as err:
        t.compaction.schedule(UnBoundedCompactionStrategy())
    assert str(path) in str(err.value) and "hoodie.populate.meta.fields" in str(err.value)
    assert _tree(path) == before


@pytest.mark.parametrize("version", [6, 9])
def test_run_refuses_a_pending_plan_on_such_a_table_before_marking_it_inflight(tmp_path: Path, version: int) -> None:
    path = tmp_path / "t"
    t = _table_with_logs(path, version)
    c = t.compaction.schedule(UnBoundedCompactionStrategy())  # a plan pending when the table is switched
    assert c is not None
    _without_meta_fields(path)
    before = _tree(path)
    with pytest.raises(evt.UnsupportedTableError, match="populate"):
        evt.HudiTable.open(path).compaction.run(c.instant)
    assert _tree(path) == before
