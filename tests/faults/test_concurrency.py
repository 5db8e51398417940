"""An ingestion process keeps committing while a compaction runs (on Spark, and locally); both succeed.

The plan is scheduled first (links at schedule time), then a child process starts writing batches, one deltacommit
each, and keeps going until it sees ``C.commit`` and has written once more (bounded: at most ``MAX_BATCHES``). The
parent runs ``run_compaction`` meanwhile. Afterwards our snapshot and hudi-rs's equal the oracle of the whole history
plus every batch the child wrote, the plan validates, and every log the child wrote sits in the new slice ``C``
after the links (the versions the plan reserved).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evt_toolkit as evt
from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
from evt_toolkit.compaction.executor import run_compaction
from evt_toolkit.compaction.schedule import schedule_compaction
from evt_toolkit.compaction.validate import validate_compaction
from evt_toolkit.faults import ENV_VAR
from evt_toolkit.format.names import LogFileName
from evt_toolkit.table.timeline import DELTA_COMMIT
from tests.faults import CHILD_TIMEOUT, REPO_ROOT, check_readers, oracle_of
from tests.faults.test_kill9 import HISTORY
from tests.tables import BASE, create, rows

pytest.importorskip("hudi", reason="hudi-rs (PyPI 'hudi') is a test dependency")

T = BASE + 300
MAX_BATCHES = 200
#: Pause between the writer's batches (seconds), so that a long Spark run does not reach MAX_BATCHES.
PAUSE = 0.2

WRITER = textwrap.dedent(
    """
    import os, sys, time
    import evt_toolkit as evt
    from tests.faults.test_concurrency import batch

    path, commit_file, started_file = sys.argv[1:4]
    max_batches, pause = int(sys.argv[4]), float(sys.argv[5])
    t = evt.HudiTable.open(path)
    n = 0
    after_commit = 0
    while n < max_batches and after_commit < 2:
        seen = os.path.exists(commit_file)
        t.write(batch(n))
        n += 1
        after_commit += seen
        if n == 1:
            open(started_file, "w").close()
        time.sleep(pause)
    print(n, after_commit, flush=True)
    """
)


def batch(i: int) -> pd.DataFrame:
    """Batch ``i`` of the concurrent writer: updates across every file group, a new key, late and fresh events."""
    ids = [i % 40, (i * 7 + 3) % 40, (i * 13 + 1) % 40, 100 + i]
    return rows(ids, 100 + i, 250 if i % 2 else 350 + i)


def _run_with_concurrent_writer(tmp_path: Path, spark: Any) -> None:
    t = create(tmp_path / "t", "event_time")
    for op, df in HISTORY:
        t.write(df, op)
    c = schedule_compaction(t, EventTimeBasedCompactionStrategy(threshold=T))
    assert c is not None and c.links
    commit_file = Path(t.path) / ".hoodie" / f"{c.instant}.commit"
    started_file = tmp_path / "writer-started"
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, t.path, str(commit_file), str(started_file), str(MAX_BATCHES), str(PAUSE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )
    try:
        deadline = time.monotonic() + CHILD_TIMEOUT
        while not started_file.exists():
            assert writer.poll() is None, f"the writer died: {writer.communicate()[1][-2000:]}"
            assert time.monotonic() < deadline, "the writer never wrote its first batch"
            time.sleep(0.05)
        written_at_start = _completed_writes(t)
        res = run_compaction(t, c.instant, spark=spark)
        written_at_end = _completed_writes(t)
        out, err = writer.communicate(timeout=CHILD_TIMEOUT)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == 0, err[-2000:]
    n, after_commit = map(int, out.split())
    assert after_commit == 2, f"the writer stopped after {n} batches without seeing {c.instant}.commit"
    assert res.operations == c.operations

    t.refresh()
    ours = [i for i in t.timeline.instants if i.action == DELTA_COMMIT and i.time > c.instant]
    assert len(ours) == n and all(i.is_completed for i in ours)
    # Both ran at once: some of the writer's commits completed before the compaction's, some after.
    assert written_at_start - set(_history_writes(t, c.instant)), "the writer committed before the run"
    assert len(written_at_end) < len(_completed_writes(t)), "the writer committed after the run"
    expected = oracle_of([*HISTORY, *(("upsert", batch(i)) for i in range(n))])
    check_readers(t, expected, "after the concurrent run")
    assert validate_compaction(t, c.instant).ok

    # Every log the writer put into a file group of the plan sits in slice C, after the plan's links.
    top_link: dict[str, int] = {}
    for link in c.links:
        parsed = LogFileName.parse(link.symlink)
        assert parsed is not None
        top_link[parsed.file_id] = max(top_link.get(parsed.file_id, 0), parsed.version)
    planned = {op.file_id for op in c.plan.operations}
    for inst in ours:
        meta = t.timeline.commit_metadata(inst)
        for stats in [meta.write_stats]:
            for st in stats:
                name = st.file_name
                log = LogFileName.parse(name)
                assert log is not None, name
                if log.file_id in planned:
                    assert log.base_instant == c.instant, f"{name} was written after {c.instant} was planned"
                    assert log.version > top_link.get(log.file_id, 1), f"{name} is not after the links"


def _completed_writes(t: evt.HudiTable) -> set[str]:
    return {i.time for i in t.refresh().timeline.instants if i.action == DELTA_COMMIT and i.is_completed}


def _history_writes(t: evt.HudiTable, before: str) -> list[str]:
    return [i for i in _completed_writes(t) if i < before]


@pytest.mark.spark
def test_writer_process_during_a_spark_compaction(tmp_path: Path, spark: Any) -> None:
    _run_with_concurrent_writer(tmp_path, spark)


def test_writer_process_during_a_local_compaction(tmp_path: Path) -> None:
    _run_with_concurrent_writer(tmp_path, None)
