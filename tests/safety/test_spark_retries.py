"""Real Spark task retries: a child process starts its own ``local[2,4]`` session (Spark re-runs a failed task up to
four times; the suite's shared ``local[2]`` session never does) and runs the scenarios of
:mod:`tests.safety.spark_retry_child`, each with the FIRST attempt of one task dying (``os._exit``, or ``SIGKILL``
from the ``write.after_task`` fault point, armed for attempt 0 only) so that Spark re-runs it in a fresh Python
worker:

* writes of a pandas batch on :func:`~evt_toolkit.spark.executor.spark_executor` and of a Spark DataFrame
  (:func:`~evt_toolkit.spark.executor.write_dataframe`) whose dying attempt wrote nothing, wrote its ownership
  record, marker and complete logs, left its last log half written, or completed everything but returning;
* compactions on Spark whose first attempt of one operation dies before or after writing its base file;
* a write and a compaction whose task dies on every attempt: Spark gives up after four, the operation fails with an
  ``EvtError`` and stays inflight with answers unchanged; the documented recovery (roll the write back and write
  again, run the compaction again) restores the answer and leaves no file of the dead attempts;
* a write task attempt that runs on after the driver committed, or after its instant was rolled back (a speculative
  copy or lost retry that Spark has not stopped yet): it must neither add a file to the committed instant nor leave
  one no commit lists;
* a write whose job fails (one task fails four times) while another of its tasks still runs (the session's
  ``spark.python.task.killTimeout`` is long, so Spark's cancelled task really runs on): the failed write is rolled
  back at once and the straggler then tries to write; nothing it writes may stay on storage;
* a compaction task attempt that runs on after the compaction committed: its outputs carry the plan's names, so it
  would rewrite them: it is refused (its compaction is no longer running), and no data file changes or is added.

Each scenario checks that a first attempt really died, then the table against a plain dict model and hudi-rs
(snapshot, time travel to every write, the incremental read has each key once), that no data file is left that no
completed commit lists, and that a later write, rollback and clean keep every answer. The CI size runs table
version 9 and a few version-6 cases; ``EVT_SAFETY_SPARK_RETRIES_FULL=1`` runs every point on both entry points and
versions 6 and 9.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]


def test_real_spark_task_retries(tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")
    pytest.importorskip("hudi", reason="hudi-rs is not installed")
    out = tmp_path / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env["PYSPARK_PYTHON"] = sys.executable
    timeout = 3600 if os.environ.get("EVT_SAFETY_SPARK_RETRIES_FULL") == "1" else 600
    proc = subprocess.run(
        [sys.executable, "-m", "tests.safety.spark_retry_child", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert out.exists(), f"the Spark child ran no scenario (exit {proc.returncode}): {proc.stderr[-3000:]}"
    results = json.loads(out.read_text())
    failed = {name: text for name, text in results.items() if text != "ok"}
    assert results, "no scenario ran"
    assert not failed, "\n\n".join(f"{name}: {text}" for name, text in failed.items())
