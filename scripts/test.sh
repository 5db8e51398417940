#!/usr/bin/env bash
# The full test suite: set everything up, then lint (ruff), type-check (mypy), install the browser for the browser
# test, and run pytest over tests/ and the notebooks (nbval executes notebooks/*.ipynb and compares the cells marked
# `# NBVAL_CHECK_OUTPUT` with their stored outputs, after notebooks/nbval_sanitize.cfg masks instants, ids and paths).
#   bash scripts/test.sh [pytest args...]     (arguments replace the default: tests notebooks)
# Real Hudi tables are read from ../shared/fixtures (EVT_SHARED_DIR overrides); tests needing them skip with a
# reason when absent. EVT_FUZZ_EXAMPLES sets the fuzz test's example count (default keeps CI fast). The demo table is
# built once into demo_tables/flights (EVT_DEMO_TABLE overrides) and reused. The 30 slowest tests are listed at the
# end, to keep the suite's time in view.
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
echo "== pytest (tests + notebooks)"
if [ "$#" -eq 0 ]; then
  set -- tests notebooks
fi
"$VENV/bin/python" -m pytest --durations=30 \
  --nbval-lax --nbval-current-env --nbval-cell-timeout=300 \
  --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
  "$@"
