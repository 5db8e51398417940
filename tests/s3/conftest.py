"""Helpers for the table scenarios on the session's S3 server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa

import evt_toolkit as evt
from tests.conftest import REPO_ROOT
from tests.tables import COLUMNS

#: A child process: ``python -c CHILD <uri> <action> [args...]``, storage options in ``EVT_TEST_STORAGE_OPTIONS``.
CHILD = textwrap.dedent(
    """
    import json, os, sys
    import pyarrow.parquet as pq
    import evt_toolkit as evt

    uri, action, *args = sys.argv[1:]
    t = evt.HudiTable.open(uri, storage_options=json.loads(os.environ["EVT_TEST_STORAGE_OPTIONS"]))
    t.timeline  # loaded before the start line: racing children see the same table
    if os.environ.get("EVT_TEST_START_AT"):
        import time

        time.sleep(max(0.0, float(os.environ["EVT_TEST_START_AT"]) - time.time()))
    if action == "write":
        t.write(pq.read_table(args[0]), args[1])
    elif action == "write_at":  # a writer that picked instant args[2] (two writers racing for one instant)
        import evt_toolkit.write.writer as w
        w.new_instant_time = lambda *a, **k: args[2]
        t.write(pq.read_table(args[0]), args[1])
    elif action == "schedule":
        from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
        from evt_toolkit.compaction.schedule import schedule_compaction

        instant = args[3] if len(args) > 3 else None
        schedule_compaction(
            t, EventTimeBasedCompactionStrategy(threshold=int(args[0])), link_mode=args[1], link_timing=args[2],
            instant=instant,
        )
    elif action == "run":
        from evt_toolkit.compaction.executor import run_compaction

        run_compaction(t, args[0])
    else:
        raise SystemExit(f"unknown action {action}")
    print("not reached" if os.environ.get("EVT_FAULT_AT") else "done", flush=True)
    """
)


def run_child(
    uri: str, options: dict[str, str], fault: str | None, action: str, *args: str, start_at: float | None = None
) -> subprocess.Popen[str]:
    """Start a child on the S3 table; with ``start_at`` (epoch seconds) it opens the table, then waits for it."""
    env = {k: v for k, v in os.environ.items() if k not in ("EVT_FAULT_AT", "EVT_TEST_START_AT")}
    if start_at is not None:
        env["EVT_TEST_START_AT"] = str(start_at)
    env["EVT_TEST_STORAGE_OPTIONS"] = json.dumps(options)
    if fault:
        env["EVT_FAULT_AT"] = fault
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, uri, action, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO_ROOT,
    )


def hudi_rs_s3(uri: str, options: dict[str, str], ro: bool = False) -> pa.Table:
    """hudi-rs reading the same S3 table through the same storage options."""
    import hudi

    b = hudi.HudiTableBuilder.from_base_uri(uri).with_storage_options(options)
    if ro:
        b = b.with_option("hoodie.read.use.read_optimized.mode", "true")
    batches = b.build().read()
    return pa.Table.from_batches(batches) if batches else pa.table({c: pa.array([], pa.int64()) for c in COLUMNS})


def create_s3(uri: str, options: dict[str, str], buckets: int = 2) -> evt.HudiTable:
    return evt.HudiTable.create(
        uri,
        "s3t",
        "id",
        partition_by="region",
        ordering_field="ts",
        event_time_field="ev",
        buckets=buckets,
        merge_mode="event_time",
        storage_options=options,
    )
