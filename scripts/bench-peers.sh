#!/usr/bin/env bash
# Install the decoders benchmarks/decode.py compares against (not project dependencies; the
# default setup and tests never run this): the ffmpeg CLI (Debian package), OpenCV, decord
# and torchcodec into .venv. Each is optional: one that fails to install or load is reported,
# and the benchmark prints it as skipped.
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
# --no-deps keeps pip from touching the CPU torch the project pins. A build that does not load
# (PyPI's is a CUDA build: beside the CPU torch it wants libnvrtc.so.13) is removed again, since
# transformers would take an installed torchcodec for a working one.
if $VPIP install -q --no-deps "torchcodec"; then
  if ! err=$(.venv/bin/python -c "import torchcodec.decoders" 2>&1); then
    echo "bench-peers: torchcodec does not load here, removed again: $(echo "$err" | grep -m1 "cannot open shared object" || echo "$err" | tail -1)" >&2
    $VPIP uninstall -q -y torchcodec
  fi
else
  echo "bench-peers: torchcodec could not be installed" >&2
fi

# What loads: the benchmark's own check (it imports each peer in a fresh interpreter).
PYTHONPATH=src .venv/bin/python benchmarks/decode.py --peers
