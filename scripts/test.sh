#!/usr/bin/env bash
# The full test suite: set everything up, then lint (ruff), type-check (mypy) and run pytest.
#   bash scripts/test.sh [pytest args...]
# Real Hudi tables are read from ../shared/fixtures (EVT_SHARED_DIR overrides); tests needing them skip with a
# reason when absent. EVT_FUZZ_EXAMPLES sets the fuzz test's example count (default keeps CI fast).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== ruff"
.venv/bin/ruff check evt_toolkit tests
.venv/bin/ruff format --check evt_toolkit tests
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest "$@"
