#!/usr/bin/env bash
# Install everything and run the default benchmark (offline, real models, generated suite).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/frameselect bench "$@"
