#!/usr/bin/env bash
# Install everything, run the gates CONTRIBUTING.md promises (ruff lint, ruff format, mypy --strict,
# the documentation site with its API reference built by mkdocs --strict), then the test suite. Any failing gate fails the run before pytest starts.
# Exit code: the first failing gate's, else pytest's (5, no tests, is a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
gate() {
  echo "== $*" >&2
  "$@"
}
gate .venv/bin/ruff check src tests benchmarks
gate .venv/bin/ruff format --check src tests benchmarks
gate .venv/bin/mypy --strict src
gate .venv/bin/mkdocs build --strict --quiet
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "no tests ran: failing" >&2
  exit 1
fi
exit "$rc"
