#!/usr/bin/env bash
# A separate environment for the lmms-eval integration (docs/lmms-eval.md):
# lmms-eval 0.7.3 pins av<16 and wandb==0.25.0, needs filelock<4 and pulls a CUDA torchvision
# that breaks beside the CPU torch, so it lives apart from .venv.
# Usage: bash scripts/setup-lmms-eval.sh [VENV_DIR]   (default: .venv-lmms-eval)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv-lmms-eval}"
stamp="$venv/.frameselect-lmms-eval-ready"
if [[ -f "$stamp" ]]; then
    "$venv/bin/pip" install -q --no-deps -e "$root"
    exit 0
fi
python3 -m venv "$venv"
pip="$venv/bin/pip"
"$pip" install -q --upgrade pip
"$pip" install -q torch==2.13.0                      # the CPU build, before anything pulls a CUDA one
"$pip" install -q "lmms-eval==0.7.3" "filelock<4" "decord>=0.6"
"$pip" uninstall -y -q torchvision || true            # its CUDA build breaks beside the CPU torch
"$pip" install -q "numpy>=1.24" "scipy>=1.15" "tqdm>=4.60" "threadpoolctl>=3.1" "pillow>=10" "pyyaml>=6"
"$pip" install -q --no-deps -e "$root"
touch "$stamp"
