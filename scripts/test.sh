#!/usr/bin/env bash
# Install everything and run the whole test suite. Exit code: pytest's (5, no tests, is a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "no tests ran: failing" >&2
  exit 1
fi
exit "$rc"
