"""``kill -9`` before the n-th change a process makes to a table's storage: every step, not only the fault points.

The named fault points (:mod:`evt_toolkit.faults`) mark the steps the design names; unschedule, repair and the
metadata-table sync have none, and a crash between two of them is just as possible. The child below wraps every
mutating :class:`~evt_toolkit.storage.fs.TableStorage` method (write, put-if-absent, copy, symlink, delete) and kills
itself with ``SIGKILL`` right before the n-th call: ``n = 1, 2, ...`` walks an operation through every storage state
a crash can leave behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

from evt_toolkit.faults import ENV_VAR
from tests.faults.forked import run_forked

REPO_ROOT = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT = 180

CHILD = textwrap.dedent(
    """
    import json, os, signal, sys, threading
    import pyarrow.parquet as pq
    import evt_toolkit as evt
    from evt_toolkit.storage.fs import TableStorage

    kill_at = int(sys.argv[1])
    path, action, *args = sys.argv[2:]
    lock = threading.Lock()
    calls = [0]

    def wrap(name):
        original = getattr(TableStorage, name)

        def wrapped(self, *a, **kw):
            with lock:
                calls[0] += 1
                if calls[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
            return original(self, *a, **kw)

        setattr(TableStorage, name, wrapped)

    # write_many and put_if_absent go through write_bytes_atomic; delete_dir through delete_files on object stores.
    for name in ("write_bytes_atomic", "copy_file", "delete_file", "delete_files", "delete_dir", "symlink"):
        wrap(name)
    options = json.loads(os.environ.get("EVT_TEST_STORAGE_OPTIONS") or "null")
    t = evt.HudiTable.open(path, storage_options=options)
    if action == "write":  # [batch.parquet, operation, index type]
        t.write(pq.read_table(args[0]), args[1], options={"hoodie.index.type": args[2]})
    elif action == "schedule":  # [threshold or "", link mode, link timing]
        from evt_toolkit.compaction import EventTimeBasedCompactionStrategy
        from evt_toolkit.compaction.strategy import UnBoundedCompactionStrategy

        s = EventTimeBasedCompactionStrategy(threshold=int(args[0])) if args[0] else UnBoundedCompactionStrategy()
        t.compaction.schedule(s, link_mode=args[1], link_timing=args[2])
    elif action == "run":
        t.compaction.run(args[0])
    elif action == "clean":
        t.clean(args[0], int(args[1]), dry_run=False)
    elif action == "rollback":
        t.rollback(args[0])
    elif action == "unschedule":
        t.compaction.unschedule(args[0], dry_run=False)
    elif action == "repair":
        t.compaction.repair(dry_run=False, older_than_s=0)
    else:
        raise SystemExit(f"unknown action {action}")
    print("not reached", calls[0], flush=True)
    """
)


def run_killed_at(
    n: int, table: str | Path, action: str, *args: str, storage_options: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``action`` on ``table`` in a child killed right before its ``n``-th storage change (return code -9), or
    finishing normally (0, stdout ``not reached <changes>``) when it makes fewer."""
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    env["EVT_TEST_STORAGE_OPTIONS"] = json.dumps(storage_options)
    return run_forked(CHILD, [str(n), str(table), action, *args], env, REPO_ROOT, CHILD_TIMEOUT)
