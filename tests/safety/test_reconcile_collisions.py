"""A write's reconcile deletes only its own files, never another write's log that took a name it recorded (v6).

A write task records the files it is about to create (ownership records), then creates them. An attempt that fails
in between leaves a record of a file it never made, and before completing, the writer deletes every recorded file no
write stat lists (Hudi's ``reconcileAgainstMarkers``). On version 6 a log's name carries its slice's base instant,
not its writer, so another write into the same slice, planned while the first attempt's file did not exist, takes the
very same name when its write token matches (``0-0-0``: the first task of a job, or this toolkit's local writer). The
reconcile deleted that committed log as the failed attempt's: its records were lost.

The test builds it for real: the first attempt's marker cannot be written (a folder holds its name), so the attempt
fails between its record and its log, as a task killed there would; another handle's write into the slice commits a
log under the recorded name; the write's second attempt (another task attempt id, as Spark retries) completes it.
Checked: the other write's log is still there, and the snapshot (ours and hudi-rs) equals a plain model of the three
committed writes. Versions 8 and 9 name a log after its own deltacommit, so two writes never share a name there.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import evt_toolkit as evt
from evt_toolkit.errors import EvtError
from evt_toolkit.format.names import LogFileName, new_write_token
from evt_toolkit.format.table_version import table_version_format
from evt_toolkit.write.plan import FileGroupWrite, WriteJobSpec
from evt_toolkit.write.task import FileWritten, write_file_group
from tests.tables import BASE, create, hudi_rs, rows


def _model(got: pa.Table) -> dict[int, tuple[int, int]]:
    return {r["id"]: (r["ts"], r["ev"] - BASE) for r in got.select(["id", "ts", "ev"]).to_pylist()}


def test_a_retried_write_task_keeps_another_writes_log_that_took_the_name_its_failed_attempt_recorded(
    tmp_path: Path,
) -> None:
    t = create(tmp_path / "t", "event_time", buckets=1, table_version=6)
    t.write(rows([1, 3], 10, 100))
    other = evt.HudiTable.open(t.path)
    taken: list[str] = []

    def retried(spec: WriteJobSpec, items: list[tuple[FileGroupWrite, pa.Table, pa.Table]]) -> list[list[FileWritten]]:
        (fg, up, de), *_ = items
        first = new_write_token(0, 0, 0)
        name = LogFileName(fg.file_id, fg.base_instant, "log", fg.log_version, first).name
        fmt = table_version_format(6)
        marker = fmt.log_marker_path(
            spec.instant,
            fg.partition_path,
            name,
            file_id=fg.file_id,
            write_token=first,
            slice_base_instant=fg.base_instant,
        )
        (Path(t.path) / marker / "held").mkdir(parents=True)  # the marker cannot be written: the attempt fails
        with pytest.raises(EvtError):
            write_file_group(spec, fg, up, de, 0, 0, 0)
        assert not (Path(t.path) / fg.partition_path / name).exists()
        # Meanwhile another write into the slice, planned without that file, commits a log under its name.
        other.write(rows([1], 15, 150))
        taken.append(f"{fg.partition_path}/{name}")
        assert (Path(t.path) / taken[0]).exists(), "the other write's log has the name the failed attempt recorded"
        # Spark runs the task again (another task attempt id, so another write token).
        return [write_file_group(spec, fg, up, de, 0, 0, 1)]

    t.write(rows([3], 20, 200), executor=retried)
    assert (Path(t.path) / taken[0]).exists(), f"the reconcile deleted the other write's committed log {taken[0]}"
    model = {1: (15, 150), 3: (20, 200)}
    assert _model(t.refresh().read()) == model
    assert _model(hudi_rs(t.path)) == model
