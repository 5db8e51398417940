"""A write whose instant was rolled back while it ran never reports success (versions 6 and 9).

A rollback cannot tell a running write from a failed one (the toolkit keeps no heartbeat): an operator or a job that
rolls back a pending deltacommit while its driver still runs deletes the files its tasks wrote and its timeline
files. The driver then wrote ``W.deltacommit`` all the same and returned ``W``: a write reported committed whose
records were gone, in every reader.

The test rolls the write back, for real and from another handle, after its tasks wrote and before its driver
completes (the ``executor`` hook), then checks: the write fails with a ``WriteError`` naming the instant, the timeline
holds no completed ``W``, and the snapshot (ours and hudi-rs) equals a plain model without the write; a write after
it commits as usual. Locally and on the session's S3 server.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.errors import WriteError
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec
from evt_toolkit.write.task import FileWritten
from evt_toolkit.write.writer import local_executor
from tests.s3.conftest import hudi_rs_s3
from tests.tables import BASE, create, hudi_rs, rows


def _model(got: pa.Table) -> dict[int, tuple[int, int]]:
    return {r["id"]: (r["ts"], r["ev"] - BASE) for r in got.select(["id", "ts", "ev"]).to_pylist()}


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_rolled_back_while_its_driver_ran_does_not_complete(tmp_path: Path, version: int) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=version)
    _scenario(t, evt.HudiTable.open(t.path), lambda: hudi_rs(t.path))


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_rolled_back_while_its_driver_ran_does_not_complete_on_s3(s3_server: Any, version: int) -> None:
    uri = f"s3://{s3_server.new_bucket('rolledback')}/t"
    t = create(uri, "event_time", buckets=1, table_version=version, storage_options=s3_server.options)
    other = evt.HudiTable.open(uri, storage_options=s3_server.options)
    _scenario(t, other, lambda: hudi_rs_s3(uri, s3_server.options))


def _scenario(t: evt.HudiTable, other: evt.HudiTable, rs: Callable[[], pa.Table]) -> None:
    t.write(rows([1, 3], 10, 100))
    model = {1: (10, 100), 3: (10, 100)}
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
    assert _model(rs()) == model
    t.write(rows([3], 30, 300))
    model[3] = (30, 300)
    assert _model(t.refresh().read()) == model
    assert _model(rs()) == model
