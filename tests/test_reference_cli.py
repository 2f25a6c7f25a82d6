"""`frameselect select ... --param reference_exact=true` reproduces the reference code's outputs.

The references are the step-by-step restatements of AKS (frame_select.py), BOLT
(select_frames.py), MDP3 (Ovis plugin/mdp3.py) and FOCUS (focus.py) kept in the
selector tests; here they meet the command line a researcher would use.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from frameselect.cli import main

HERE = Path(__file__).parent / "selectors"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_ref_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _select(tmp_path: Path, selector: str, k: int, *extra: str, **arrays: np.ndarray) -> list[int]:
    args = ["select", "--selector", selector, "--k", str(k), "--param", "reference_exact=true", "--output", str(tmp_path / "out.json"), *extra]
    for name, value in arrays.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += [f"--{name}", str(tmp_path / f"{name}.npy")]
    assert main(args) == 0
    return list(json.loads((tmp_path / "out.json").read_text())["indices"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aks(tmp_path: Path, seed: int) -> None:
    ref = _load("test_aks")
    scores = np.random.default_rng(seed).random(256) ** 4
    want = ref.ref_aks(list(scores), list(range(256)), max_num_frames=64)
    assert _select(tmp_path, "aks", 64, scores=scores) == [int(i) for i in want]


@pytest.mark.parametrize("k", [2, 8, 17])
def test_bolt(tmp_path: Path, k: int) -> None:
    ref = _load("test_bolt")
    scores = np.random.default_rng(k).random(120)
    want = ref.ref_inverse_transform_sampling(scores, k)
    assert _select(tmp_path, "bolt", k, scores=scores) == [int(i) for i in want]


def test_mdp3(tmp_path: Path) -> None:
    ref = _load("test_mdp3")
    rng = np.random.default_rng(3)
    emb = rng.standard_normal((64, 8)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    text = emb[10] + 0.1 * rng.standard_normal(8).astype(np.float32)
    text /= np.linalg.norm(text)
    want = ref.ref_mdp3(emb.astype(np.float64), text.astype(np.float64), 6, segment_size=32)
    assert _select(tmp_path, "mdp3", 6, embeddings=emb, text=text) == sorted(int(i) for i in want)


@pytest.mark.parametrize("seed", [0, 7])
def test_focus_with_the_same_seeded_generator(tmp_path: Path, seed: int) -> None:
    ref = _load("test_focus")
    scores = np.random.default_rng(11).random(300) ** 3
    want = ref.ref_focus(scores, 1.0, 16, np.random.default_rng(seed))
    got = _select(tmp_path, "focus", 16, "--seed", str(seed), scores=scores, timestamps=np.arange(300, dtype=np.float64))
    assert got == [int(i) for i in want]
