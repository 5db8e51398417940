"""A pending compaction on a real v6 table: slices as Java's file-system view builds them.

No fixture has a pending compaction, so this copies ``mor_v6_trips_8i1u`` and schedules one by hand (a Hudi
compaction plan, Avro, in ``C.compaction.requested``), then adds what Hudi writers produce while it is pending: a log
file named with the compaction instant, and a half-written base file of the compaction.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import evt_toolkit as evt
from evt_toolkit.format.metadata import encode_avro_container, load_schema
from tests.conftest import SKIP_NO_SHARED, fixture_table_path
from tests.normalize import assert_same_rows

pytestmark = [SKIP_NO_SHARED, pytest.mark.fixtures]

C = "20250401000000000"


def _schedule(tmp_path: Path) -> tuple[Path, str, str]:
    d = tmp_path / "t"
    shutil.copytree(fixture_table_path("mor_v6_trips_8i1u"), d)
    for p in d.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    (log,) = sorted(d.rglob(".*.log.*"))
    partition = log.parent.name
    t = evt.HudiTable.open(d)
    (s,) = [s for s in t.view.latest_file_slices() if s.log_files]
    plan = {
        "operations": [
            {
                "baseInstantTime": s.base_instant,
                "deltaFilePaths": [lf.name for lf in s.log_files],
                "dataFilePath": s.base_file.name if s.base_file else None,
                "fileId": s.file_id,
                "partitionPath": partition,
                "metrics": {"TOTAL_LOG_FILES": 1.0},
                "bootstrapFilePath": None,
            }
        ],
        "extraMetadata": None,
        "version": 2,
        "strategy": None,
        "preserveHoodieMetadata": False,
    }
    schema = load_schema("HoodieCompactionPlan.v6")
    (d / ".hoodie" / f"{C}.compaction.requested").write_bytes(encode_avro_container(plan, schema))
    # A log written after scheduling: Hudi names it with the compaction instant (the new slice's base instant).
    new_log = log.parent / f".{s.file_id}_{C}.log.1_0-99-1"
    new_log.write_bytes(log.read_bytes())
    # A base file the (still running) compaction already wrote: must stay invisible.
    assert s.base_file is not None
    (log.parent / f"{s.file_id}_0-1-1_{C}.parquet").write_bytes((d / s.base_file.path).read_bytes())
    return d, s.file_id, new_log.name


def test_pending_compaction_slices(tmp_path: Path) -> None:
    d, file_id, new_log = _schedule(tmp_path)
    t = evt.HudiTable.open(d)
    assert [i.action for i in t.timeline.pending_compactions()] == ["compaction"]
    rows = {r["file_id"]: r for r in t.file_slices().to_pylist()}
    row = rows[file_id]
    assert row["pending_compaction"] == C
    assert row["base_instant"] == C
    assert row["base_file"] is None  # the compaction's own output is hidden until it commits
    assert row["log_files"] == [new_log]
    merged = {s.file_id: s for s in t.view.latest_merged_file_slices()}[file_id]
    assert merged.base_file is not None and not merged.base_file.name.endswith(f"_{C}.parquet")
    assert [lf.name for lf in merged.log_files][-1] == new_log
    assert len(merged.log_files) == 2
    # Read-optimized skips the pending compaction's base file and keeps the previous one.
    ro_names = {b.name for b in t.view.latest_base_files()}
    assert not any(n.endswith(f"_{C}.parquet") for n in ro_names)


def test_snapshot_during_pending_compaction_is_unchanged(tmp_path: Path) -> None:
    before = evt.HudiTable.open(fixture_table_path("mor_v6_trips_8i1u")).read()
    d, _, _ = _schedule(tmp_path)
    after = evt.HudiTable.open(d).read()
    # The new log replays the same writes again: merging is idempotent, so the snapshot is unchanged.
    assert_same_rows(after, before, what="snapshot with pending compaction")
    assert after.num_rows == before.num_rows
