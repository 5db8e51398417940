"""Table settings stock Hudi writes into ``hoodie.properties`` that change where or how records are stored.

Drives the writer on tables of each writable version (6 and 9) whose ``hoodie.properties`` carries a setting stock
Hudi tables have, and checks that each write either puts the records where stock Hudi writers and readers look for
them or is refused with an ``EvtError`` naming the table before anything is written (every byte of the table
unchanged):

* ``hoodie.datasource.write.partitionpath.urlencode=true``: Hudi's writers escape partition values
  (``PartitionPathEncodeUtils.escapePathName``: ``x:y`` → ``x%3Ay``), so a record written under the raw value would
  land in another partition folder than the one its key lives in under a stock writer — two live copies of one key.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.errors import EvtError
from evt_toolkit.format.properties import dump_properties, parse_properties


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _set_properties(path: Path, **changes: str) -> None:
    f = path / ".hoodie" / "hoodie.properties"
    props = parse_properties(f.read_text())
    props.update(changes)
    f.write_text(dump_properties(props))


def _rows(region: str) -> pa.Table:
    return pa.table(
        {"id": pa.array([1, 2], pa.int64()), "region": [region, region], "ts": pa.array([5, 6], pa.int64())}
    )


@pytest.mark.parametrize("version", [6, 9])
def test_url_encoded_partition_paths_are_written_encoded_or_refused(tmp_path: Path, version: int) -> None:
    path = tmp_path / "t"
    evt.HudiTable.create(path, "t", "id", partition_by="region", ordering_field="ts", table_version=version)
    _set_properties(path, **{"hoodie.datasource.write.partitionpath.urlencode": "true"})
    t = evt.HudiTable.open(path)
    before = _files(path)
    try:
        t.write(_rows("x:y"))
    except EvtError as e:
        assert str(path) in str(e), f"the refusal does not name the table: {e}"
        assert _files(path) == before, "a refused write changed the table"
        return
    folders = {p.parent.name for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    assert "region=x%3Ay" in folders and "region=x:y" not in folders, f"records written under {folders}"
