#!/usr/bin/env bash
# Install everything and run the default benchmark (offline, real models, generated suite).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# the videos are computed in worker processes, one per core (the same tables as the serial default;
# a later --executor in "$@" wins)
exec .venv/bin/frameselect bench --executor process "$@"
