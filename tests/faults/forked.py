"""Children forked from a pre-imported server, for the ``kill -9`` tests.

A child started with ``python -c`` spends about a second importing pyarrow, polars, pandas and the toolkit before it
does its step; the crash tests start hundreds of them. :func:`run_forked` asks a multiprocessing *forkserver* — one
fresh interpreter per test process that imported those modules once (before any thread started) — to fork a child
per step. The child is still a process of its own: it sets its environment and working directory as a ``subprocess``
child would, runs the code with ``sys.argv``, writes its output to files, and dies with ``SIGKILL`` at its fault
point (exit code ``-9``, as ``subprocess`` reports it).
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

#: Imported once by the forkserver, so that each child starts with them loaded.
PRELOAD = [
    "pyarrow",
    "pyarrow.parquet",
    "pyarrow.compute",
    "pyarrow.fs",
    "pandas",
    "polars",
    "evt_toolkit.api",
    "evt_toolkit.compaction.executor",
    "evt_toolkit.compaction.schedule",
    "tests.faults.forked",
]

_CTX = multiprocessing.get_context("forkserver")
_CTX.set_forkserver_preload(PRELOAD)


def _child(code: str, argv: list[str], env: dict[str, str], cwd: str, out: str, err: str) -> None:
    """The forked child: the environment, working directory, ``sys.argv`` and output files of a ``-c`` child."""
    with open(out, "wb") as fo, open(err, "wb") as fe:
        os.dup2(fo.fileno(), 1)
        os.dup2(fe.fileno(), 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - the child's own stdout until it exits
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = ["-c", *argv]
    code_rc = 0
    try:
        exec(compile(code, "<child>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        code_rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code_rc = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code_rc)


def run_forked(
    code: str, argv: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as ``python -c code *argv`` would, in a child forked from the pre-imported server."""
    with tempfile.TemporaryDirectory(prefix="evt-child-") as tmp:
        out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        p = _CTX.Process(target=_child, args=(code, argv, env, str(cwd), out, err))
        p.start()
        p.join(timeout)
        if p.is_alive():
            p.kill()
            p.join()
            raise subprocess.TimeoutExpired(["<forked child>", *argv], timeout)
        with open(out, encoding="utf-8", errors="replace") as f:
            stdout = f.read()
        with open(err, encoding="utf-8", errors="replace") as f:
            stderr = f.read()
    rc = p.exitcode if p.exitcode is not None else -1
    return subprocess.CompletedProcess(["<forked child>", *argv], rc, stdout, stderr)
