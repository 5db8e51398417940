"""Crash safety (``kill -9`` at every fault point, then recovery) and concurrency (a writer during a compaction)."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pandas as pd
import pyarrow as pa

import evt_toolkit as evt
from evt_toolkit.faults import ENV_VAR
from evt_toolkit.format.names import BaseFileName, LogFileName
from tests.faults.forked import run_forked
from tests.oracle import Oracle
from tests.tables import COLUMNS, hudi_rs, same

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Seconds a child may take before the test fails (never a hang).
CHILD_TIMEOUT = 120

#: The child: ``python -c CHILD <table> <action> [args...]``; prints ``not reached`` only if no fault fired.
CHILD = textwrap.dedent(
    """
    import sys
    import pyarrow.parquet as pq
    import evt_toolkit as evt

    path, action, *args = sys.argv[1:]
    t = evt.HudiTable.open(path)
    if action == "write":  # [batch.parquet, operation, index type of a stock table]
        t.write(pq.read_table(args[0]), args[1], options={"hoodie.index.type": args[2]} if len(args) > 2 else None)
    elif action == "schedule":
        from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
        from evt_toolkit.compaction.schedule import schedule_compaction

        schedule_compaction(
            t, EventTimeBasedCompactionStrategy(threshold=int(args[0])), link_mode=args[1], link_timing=args[2]
        )
    elif action == "run":
        from evt_toolkit.compaction.executor import run_compaction

        run_compaction(t, args[0])
    elif action == "clean":
        t.clean(args[0], int(args[1]), dry_run=False)
    elif action == "rollback":
        t.rollback(args[0])
    else:
        raise SystemExit(f"unknown action {action}")
    print("not reached", flush=True)
    """
)


def run_child(table: Path, fault: str | None, action: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run one step in a child process with ``EVT_FAULT_AT=fault``; the caller checks the return code."""
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    if fault:
        env[ENV_VAR] = fault
    return run_forked(CHILD, [str(table), action, *args], env, REPO_ROOT, CHILD_TIMEOUT)


def assert_killed(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == -9, f"expected SIGKILL, got {proc.returncode}: {proc.stderr[-2000:]}"
    assert "not reached" not in proc.stdout


def save_batch(df: pd.DataFrame, path: Path) -> Path:
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    return path


def copy_table(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def oracle_of(history: list[tuple[str, pd.DataFrame]]) -> pa.Table:
    o = Oracle(["id"], ["region"], "ts", "event_time")
    for op, df in history:
        o.apply(op, df)
    return pa.Table.from_pandas(o.result()[COLUMNS], preserve_index=False)


def check_readers(t: evt.HudiTable, expected: pa.Table, what: str) -> None:
    """Our snapshot and hudi-rs's equal the oracle (as multisets); our RO equals hudi-rs's RO."""
    t.refresh()
    same(t.read(), expected, f"{what}: our snapshot")
    same(hudi_rs(t.path), expected, f"{what}: hudi-rs snapshot")
    same(hudi_rs(t.path, ro=True), t.read("read_optimized"), f"{what}: RO, ours vs hudi-rs")


def data_files(root: Path) -> set[str]:
    """Every data file (base or log) under the table, relative paths; symlinks included."""
    out = set()
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if rel.parts[0] == ".hoodie" or not (p.is_file() or p.is_symlink()):
            continue
        if LogFileName.parse(p.name) or BaseFileName.parse(p.name):
            out.add(rel.as_posix())
    return out


def orphan_files(t: evt.HudiTable) -> dict[str, list[str]]:
    """Data files whose slice instant is on no timeline (in any state): ``instant -> paths``."""
    known = {i.time for i in t.refresh().timeline.instants}
    out: dict[str, list[str]] = {}
    for rel in sorted(data_files(Path(t.path))):
        name = rel.rsplit("/", 1)[-1]
        log = LogFileName.parse(name)
        instant = log.base_instant if log else BaseFileName.parse(name).instant  # type: ignore[union-attr]
        if instant not in known:
            out.setdefault(instant, []).append(rel)
    return out
