"""Regression tests for tables with a metadata table, each named after what it protects.

The listing oracle is storage itself (every committed data file, :func:`tests.mdt.mdt_helpers.committed_files`),
against which the metadata table's ``files`` partition is compared.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import evt_toolkit as evt
from evt_toolkit.errors import RollbackError
from tests.conftest import SKIP_NO_SHARED, fixture_table_path
from tests.mdt.mdt_helpers import committed_files, mdt_files, tree


def _truncated_at(dst: Path, last: str, compaction: str) -> evt.HudiTable:
    """A copy of ``mor_v9_txns_simple_meta`` as it was right after Hudi compacted its metadata table at
    ``compaction``: deltacommit ``last`` is the table's last write and the compaction's base HFile already lists its
    files (Hudi compacts the metadata table once every instant before it completed)."""
    shutil.copytree(fixture_table_path("mor_v9_txns_simple_meta"), dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    for folder in (dst / ".hoodie" / "timeline", dst / ".hoodie" / "metadata" / ".hoodie" / "timeline"):
        for f in folder.iterdir():
            if f.is_file() and f.name[:17] > last and not f.name.startswith(compaction):
                f.unlink()
    for f in (dst / ".hoodie" / "metadata" / "files").iterdir():
        if f.name.startswith(".files") and f.name.split("_")[1].split(".")[0] > last:
            f.unlink()
    return evt.HudiTable.open(dst)


@SKIP_NO_SHARED
def test_a_write_already_compacted_into_the_metadata_table_is_not_rolled_back(tmp_path: Path) -> None:
    """Rolling back ``last`` would delete its files, but the metadata table's base HFile would go on listing them
    (rolling back the metadata instant only removes its log): Hudi refuses (``validateRollback``: the commit
    completed before the latest metadata-table compaction; a restore is the way), and so must we, before changing
    anything."""
    last, compaction = "20260307162611195", "20260307162612567"
    t = _truncated_at(tmp_path / "t", last, compaction)
    path = Path(t.path)
    assert mdt_files(path) == committed_files(path), "the truncated copy is consistent"
    assert t.timeline.completed_commits()[-1].time == last
    before = tree(path)
    with pytest.raises(RollbackError, match=rf"{last}.*{compaction}"):
        t.rollback(last)
    assert tree(path) == before, "refused before anything changed"
    assert mdt_files(path) == committed_files(path)


@SKIP_NO_SHARED
def test_the_way_out_a_refusal_names_is_a_command_that_runs(tmp_path: Path) -> None:
    """A write refused for a metadata table the toolkit cannot keep consistent says how out: the ``evt`` command it
    names must be one the command line takes, and do it (it named ``--apply``, a flag ``evt metadata disable`` does
    not have: the operator following the message got a usage error)."""
    import re

    from evt_toolkit.cli.app import main as evt_main
    from tests.mdt.mdt_helpers import copy_fixture

    path = copy_fixture("mor_v9_mor_nonpart_3commits", tmp_path)
    t = evt.HudiTable.open(path)
    batch = t.read().select([c for c in t.read().column_names if not c.startswith("_hoodie_")]).slice(0, 1)
    with pytest.raises(evt.UnsupportedTableError) as refused:
        t.write(batch, options={"hoodie.index.type": "SIMPLE"})
    advised = re.search(r"`evt ([^`]+)`", str(refused.value))
    assert advised is not None, refused.value
    words = advised.group(1).split()
    assert evt_main([*words[:2], str(path), *words[2:]]) == 0, f"evt {advised.group(1)} failed"
    assert not evt.HudiTable.open(path).metadata_table.exists()
