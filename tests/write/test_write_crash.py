"""A driver killed with SIGKILL in the middle of a write leaves the table reading exactly as before.

The write runs in a child process whose executor writes some file groups and then kills its own process: no Python
clean-up runs, exactly as when a Spark driver dies. The instant stays requested/inflight, so its log blocks (in
existing file groups) and its log-only file groups (new buckets) stay invisible to our reader and to hudi-rs; the
next write succeeds with a later instant.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import evt_toolkit as evt
from tests.normalize import assert_same_rows

hudi = pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import pandas as pd
    import evt_toolkit as evt
    from evt_toolkit.write.task import write_file_group

    def dying_executor(spec, tasks):
        out = []
        for i, (fg, up, de) in enumerate(tasks):
            out.append(write_file_group(spec, fg, up, de, task_partition_id=i))
            if i == 1:
                os.kill(os.getpid(), signal.SIGKILL)
        return out

    t = evt.HudiTable.open(sys.argv[1])
    ids = list(range(0, 200, 3)) + list(range(1000, 1040))  # updates and inserts into new buckets
    df = pd.DataFrame({"id": ids, "ts": [99] * len(ids), "ev": [5] * len(ids), "name": ["crash"] * len(ids)})
    t.write(df, executor=dying_executor)
    print("not reached")
    """
)


def _batch(ids: list[int], ts: int) -> pd.DataFrame:
    return pd.DataFrame({"id": ids, "ts": [ts] * len(ids), "ev": [ts * 10] * len(ids), "name": [f"v{ts}"] * len(ids)})


def _rs_rows(path: Path) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path.resolve())).build().read())


def test_sigkilled_write_is_invisible_and_the_next_write_succeeds(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = evt.HudiTable.create(path, "crash_t", "id", ordering_field="ts", event_time_field="ev", buckets=16)
    t.write(_batch(list(range(200)), 1))
    t.write(_batch(list(range(0, 200, 2)), 2))
    before = evt.HudiTable.open(path).read()
    files_before = {p for p in path.rglob("*") if p.is_file()}

    proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    assert "not reached" not in proc.stdout

    after = evt.HudiTable.open(path)
    new_files = {p for p in path.rglob("*") if p.is_file()} - files_before
    assert any(p.name.startswith(".") and ".log." in p.name for p in new_files), "the child wrote log files"
    pending = [i.time for i in after.timeline.inflight_writes()]
    assert len(pending) == 1
    assert_same_rows(after.read(), before, what="after SIGKILL")
    assert_same_rows(_rs_rows(path), before, what="hudi-rs after SIGKILL")

    nxt = after.write(_batch([1, 2, 3], 7))
    assert nxt > pending[0]
    final = evt.HudiTable.open(path).read().to_pandas().set_index("id")
    assert (final.loc[[1, 2, 3], "name"] == "v7").all()
    assert final.loc[5, "name"] == "v1" and final.loc[4, "name"] == "v2"
    assert 1000 not in final.index  # the killed write's inserts never appeared
