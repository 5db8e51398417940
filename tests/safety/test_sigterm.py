"""``evt`` stopped by a real ``SIGTERM`` (``kill``, a scheduler ending the job) at several storage operations of a run,
clean, rollback and unschedule, in a child process.

Python's default for ``SIGTERM`` ends the process where it stands: no ``except`` or ``finally`` runs, so the calls an
operation started on other threads die with it half-way, and the user sees no word of what stopped. ``evt`` handles
it as Ctrl-C: the operation stops on the interrupt's path (started calls settle first), the process exits 143 with
one line (``terminated``) and no traceback. After each: nothing under the table changes any more, a new handle and
hudi-rs read the table as before or as after the operation (a plain dict of what was committed), and the documented
recovery (rollback of a pending write, resuming a rollback or clean, running the pending compaction) plus a further
write, full compaction and clean end at that answer plus the write (:func:`tests.safety.interrupts.problems_after`).

``EVT_SIGTERM_POINTS`` (default ``4,20``) lists the storage operations at which the signal is sent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.safety.interrupts import Case, problems_after, run_cli_interrupted

POINTS = [int(p) for p in os.environ.get("EVT_SIGTERM_POINTS", "4,20").split(",")]


@pytest.mark.parametrize("operation", ["run-full", "clean", "rollback-last", "unschedule"])
def test_evt_terminated_at_several_storage_operations(tmp_path: Path, operation: str) -> None:
    failures, fired = [], 0
    for n in POINTS:
        case = Case(str(tmp_path / f"t{n}"), 6, operation)
        code, err, where = run_cli_interrupted(case, n, "sigterm")
        if code == 0 and where is None:  # the operation makes fewer storage operations
            break
        fired += 1
        at = f"evt {operation} SIGTERM at #{n} ({where}): exit {code}"
        if code != 143 or err.strip().splitlines()[-1:] != ["terminated"] or "Traceback" in err:
            failures.append(f"{at}, stderr {err[-600:]!r}")
        found = problems_after(case, KeyboardInterrupt())
        if found:
            failures.append(f"{at}: {found}")
    assert fired, f"evt {operation} reached no storage operation"
    assert not failures, "\n".join(failures)
