"""Regression tests found by the independent sequence tester (:mod:`tests.safety.independent_1x`) on stock Hudi 1.x
tables, and a short run of the tester itself.

``EVT_IND_SEQS`` / ``EVT_IND_STEPS`` / ``EVT_IND_SEED`` size the local run (default 3 sequences of 12 steps),
``EVT_IND_S3_SEQS`` the run on the S3 server (default 1), ``EVT_IND_PROXY=1`` puts the loopback proxy that delays and
drops responses in front of it; ``python -m tests.safety.independent_1x`` runs long.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy
from tests.conftest import SKIP_NO_SHARED, fixture_table_path

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

SIMPLE = {"hoodie.index.type": "SIMPLE"}


def _copy(name: str, root: Path) -> evt.HudiTable:
    dst = root / name
    shutil.copytree(fixture_table_path(name), dst, symlinks=True)
    for p in [dst, *dst.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o200)
    t = evt.HudiTable.open(dst)
    props = dst / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + f"hoodie.payload.event.time.field={t.config.ordering_field}\n")
    return evt.HudiTable.open(dst)


def _rs_keys(path: str, key: str) -> list[Any]:
    t = hudi.HudiTableBuilder.from_base_uri(path).build()
    batches = t.read()
    return sorted(pa.Table.from_batches(batches)[key].to_pylist()) if batches else []


def _row(t: evt.HudiTable) -> tuple[pa.Schema, dict[str, Any]]:
    snap = t.read()
    cols = [c for c in snap.column_names if not c.startswith("_hoodie_")]
    schema = pa.schema([snap.schema.field(c) for c in cols])
    return schema, snap.select(cols).slice(0, 1).to_pylist()[0]


@SKIP_NO_SHARED
@pytest.mark.parametrize("fixture", ["mor_v9_txns_simple_meta", "mor_v8_trips_8i3u1d"])
@pytest.mark.parametrize("compact", [False, True])
def test_a_deleted_key_stays_deleted_after_a_late_lower_record_whether_or_not_a_compaction_ran(
    tmp_path: Path, fixture: str, compact: bool
) -> None:
    """A key deleted with ordering value 10 above its row, then written again with 5 above it: the late record loses
    to the tombstone (event-time ordering), with or without a full compaction between the two writes."""
    t = _copy(fixture, tmp_path)
    schema, row = _row(t)
    key, ordering = t.config.record_key_fields[0], t.config.ordering_field
    before = sorted(r[key] for r in t.read().to_pylist())
    gone = dict(row, **{ordering: row[ordering] + 10})
    t.write(pa.Table.from_pylist([gone], schema=schema), "delete", options=SIMPLE)
    if compact:
        c = t.compaction.schedule(UnBoundedCompactionStrategy())
        assert c is not None
        t.compaction.run(c.instant)
    late = dict(row, **{ordering: row[ordering] + 5})
    t.write(pa.Table.from_pylist([late], schema=schema), "upsert", options=SIMPLE)
    want = sorted(k for k in before if k != row[key])
    assert sorted(r[key] for r in t.refresh().read().to_pylist()) == want, "our snapshot: the deleted key came back"
    assert _rs_keys(t.path, key) == want, "hudi-rs: the deleted key came back"
