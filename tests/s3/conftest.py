"""Helpers for the table scenarios on the session's S3 server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa

import evt_toolkit as evt
from tests.compaction.helpers import COLUMNS
from tests.conftest import REPO_ROOT

#: A child process: ``python -c CHILD <uri> <action> [args...]``, storage options in ``EVT_TEST_STORAGE_OPTIONS``.
CHILD = textwrap.dedent(
    """
    import json, os, sys
    import pyarrow.parquet as pq
    import evt_toolkit as evt

    uri, action, *args = sys.argv[1:]
    t = evt.HudiTable.open(uri, storage_options=json.loads(os.environ["EVT_TEST_STORAGE_OPTIONS"]))
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


def run_child(uri: str, options: dict[str, str], fault: str | None, action: str, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "EVT_FAULT_AT"}
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
