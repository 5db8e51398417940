"""A write whose instant was rolled back while it ran never reports success (versions 6 and 9).

A rollback cannot tell a running write from a failed one (the toolkit keeps no heartbeat): an operator or a job that
rolls back a pending deltacommit while its driver still runs deletes the files its tasks wrote and its timeline
files. The driver then wrote ``W.deltacommit`` all the same and returned ``W``: a write reported committed whose
records were gone, in every reader.

The test rolls the write back, for real and from another handle, after its tasks wrote and before its driver
completes (the ``executor`` hook), then checks: the write fails with a ``WriteError`` naming the instant, the timeline
holds no completed ``W``, and the snapshot (ours and hudi-rs) equals a plain model without the write; a write after
it commits as usual.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.errors import WriteError
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec
from evt_toolkit.write.task import FileWritten
from evt_toolkit.write.writer import local_executor
from tests.tables import BASE, create, hudi_rs, rows


def _model(got: pa.Table) -> dict[int, tuple[int, int]]:
    return {r["id"]: (r["ts"], r["ev"] - BASE) for r in got.select(["id", "ts", "ev"]).to_pylist()}


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_rolled_back_while_its_driver_ran_does_not_complete(tmp_path: Path, version: int) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=version)
    t.write(rows([1, 3], 10, 100))
    model = {1: (10, 100), 3: (10, 100)}
    other = evt.HudiTable.open(t.path)
    rolled: list[Any] = []

    def rolled_back_meanwhile(
        spec: WriteJobSpec, items: list[tuple[FileGroupWrite, pa.Table, pa.Table]]
    ) -> list[list[FileWritten]]:
        out = local_executor(spec, items)
        rolled.append(other.refresh().rollback(spec.instant))
        return out

    with pytest.raises(WriteError, match="rolled back") as err:
        t.write(rows([1], 20, 200), executor=rolled_back_meanwhile)
    [result] = rolled
    assert result.target in str(err.value)
    assert not any(i.time == result.target for i in t.refresh().timeline.instants), "the rolled-back write completed"
    assert _model(t.read()) == model
    assert _model(hudi_rs(t.path)) == model
    t.write(rows([3], 30, 300))
    model[3] = (30, 300)
    assert _model(t.refresh().read()) == model
    assert _model(hudi_rs(t.path)) == model
