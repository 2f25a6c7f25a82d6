#!/usr/bin/env bash
# Regenerate the tables and figures the docs quote, one file per entry, each headed by its command
# and the machine: bash scripts/figures.sh [--list] [--only NAME ...] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" exec "$PYTHON" benchmarks/figures.py "$@"
