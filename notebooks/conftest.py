"""pytest configuration for the notebooks executed by nbval (``pytest --nbval-lax notebooks``).

Notebook 05 reads ``EVT_TABLE_PATH``: under test it opens a real Hudi-written table from ``../shared/fixtures``
(``EVT_SHARED_DIR`` overrides) and falls back to the demo table when the fixtures are absent. An explicit
``EVT_TABLE_PATH`` is left alone. The kernels nbval starts inherit this process's environment.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = Path(os.environ.get("EVT_SHARED_DIR", REPO_ROOT.parent / "shared")).resolve()
FIXTURE_TABLE = SHARED_DIR / "fixtures" / "tables" / "mor_v6_trips_8i1u" / "v6_trips_8i1u"

if "EVT_TABLE_PATH" not in os.environ and (FIXTURE_TABLE / ".hoodie" / "hoodie.properties").is_file():
    os.environ["EVT_TABLE_PATH"] = str(FIXTURE_TABLE)
    os.environ.setdefault("EVT_EVENT_TIME_FIELD", "ts")
