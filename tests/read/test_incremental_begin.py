"""An incremental read's begin may be Hudi's "from the start" values — ``earliest``, ``000``, ``0`` — as the
``hudi_evt`` Spark source and Hudi's ``hoodie.datasource.read.begin.instanttime`` take them, in ``HudiTable.read``
and ``evt read --begin`` alike (they were refused as "not a Hudi instant")."""

from __future__ import annotations

from pathlib import Path

import pytest

import evt_toolkit as evt
from tests.normalize import assert_same_rows
from tests.tables import create, rows


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("begin", ["earliest", "EARLIEST", "000", "0"])
def test_begin_from_the_start(tmp_path: Path, version: int, begin: str) -> None:
    t = create(tmp_path / "t", "commit_time", table_version=version)
    t.write(rows(range(0, 6), 10, 100))
    t.write(rows(range(3, 9), 20, 200))
    everything = t.read("incremental")
    assert everything.num_rows == 9
    assert_same_rows(t.read("incremental", begin=begin), everything, what=f"begin={begin}")


def test_a_begin_that_is_no_instant_is_still_refused(tmp_path: Path) -> None:
    t = create(tmp_path / "t", "commit_time")
    t.write(rows(range(0, 3), 10, 100))
    with pytest.raises(evt.ReadError, match="not a Hudi instant"):
        t.read("incremental", begin="yesterday")
