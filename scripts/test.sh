#!/usr/bin/env bash
# The full test suite: set everything up, then lint (ruff), type-check (mypy), install the browser for the browser
# test, and run pytest over tests/ and the notebooks (nbval executes notebooks/*.ipynb and compares the cells marked
# `# NBVAL_CHECK_OUTPUT` with their stored outputs, after notebooks/nbval_sanitize.cfg masks instants, ids and paths).
#   bash scripts/test.sh [pytest args...]     (arguments replace the default: tests notebooks)
# Real Hudi tables are read from ../shared/fixtures (EVT_SHARED_DIR overrides); tests needing them skip with a
# reason when absent. EVT_FUZZ_EXAMPLES sets the fuzz test's example count (default keeps CI fast). The demo table is
# built once into demo_tables/flights (EVT_DEMO_TABLE overrides) before pytest starts, and reused. pytest runs the test
# files on EVT_TEST_WORKERS processes (pytest-xdist, default 2: most tests wait on child processes, kernels, Spark or
# the S3 server; each process has its own Spark session and S3 server, and a file's tests stay in one process);
# EVT_TEST_WORKERS=0 runs them in this one. The 30 slowest tests are listed at the end, to keep the suite's time in
# view.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${EVT_VENV:-.venv}"
bash scripts/setup.sh

echo "== ruff"
"$VENV/bin/ruff" check evt_toolkit tests notebooks bench
"$VENV/bin/ruff" format --check evt_toolkit tests notebooks bench
echo "== mypy"
"$VENV/bin/mypy"
echo "== layers (no import cycle; each layer imports only its own and lower layers)"
"$VENV/bin/python" scripts/check_layers.py
echo "== browser (Debian chromium for tests/browser)"
bash scripts/install_browser.sh || echo "continuing without chromium: the browser test will skip"
echo "== demo table (built once, before the test processes start)"
"$VENV/bin/python" -c "from evt_toolkit.demo.locate import ensure_demo_table; ensure_demo_table(progress=False)"
echo "== pytest (tests + notebooks)"
if [ "$#" -eq 0 ]; then
  set -- tests notebooks
fi
"$VENV/bin/python" -m pytest --durations=30 -n "${EVT_TEST_WORKERS:-2}" --dist loadfile \
  --nbval-lax --nbval-current-env --nbval-cell-timeout=300 \
  --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
  "$@"
