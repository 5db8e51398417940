#!/usr/bin/env bash
# The main job: set everything up, then inspect a Hudi table (timeline, file slices, log-block headers).
#   bash scripts/main.sh [TABLE_PATH] [evt inspect options...]
# Without a path it inspects a real Hudi-written table from ../shared/fixtures when that folder is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2

TABLE="${1:-}"
if [ -z "$TABLE" ]; then
  DEFAULT="../shared/fixtures/tables/mor_v6_trips_8i1u/v6_trips_8i1u"
  if [ -d "$DEFAULT" ]; then
    TABLE="$DEFAULT"
    set -- "$TABLE" --event-time-field ts
  else
    echo "usage: bash scripts/main.sh TABLE_PATH  (no default table: ../shared/fixtures is absent)" >&2
    exit 2
  fi
fi
exec .venv/bin/evt inspect "$@"
