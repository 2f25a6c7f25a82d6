#!/usr/bin/env bash
# Install the decoders benchmarks/decode.py compares against (not project dependencies; the
# default setup and tests never run this): the ffmpeg CLI (Debian package), OpenCV, decord
# and torchcodec into .venv. Each is optional: one that fails to install or load is reported
# and the benchmark prints it as skipped, with the reason.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "bench-peers: run scripts/setup.sh first (no .venv)" >&2; exit 1; }
VPIP=".venv/bin/python -m pip"

if ! command -v ffmpeg >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null) \
      || echo "bench-peers: the ffmpeg package could not be installed" >&2
  else
    echo "bench-peers: install the ffmpeg CLI with your package manager (needs root for apt-get)" >&2
  fi
fi
$VPIP install -q "opencv-python-headless" || echo "bench-peers: OpenCV could not be installed" >&2
$VPIP install -q "decord" || echo "bench-peers: decord could not be installed" >&2
# torchcodec's wheel names no dependencies, but it must sit beside the torch it was built for;
# --no-deps keeps pip from touching the CPU torch the project pins.
$VPIP install -q --no-deps "torchcodec" || echo "bench-peers: torchcodec could not be installed" >&2

# What loads: the benchmark's own check (it imports each peer in a fresh interpreter).
PYTHONPATH=src .venv/bin/python benchmarks/decode.py --peers
