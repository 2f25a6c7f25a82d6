"""`frameselect select ... --param reference_exact=true` prints the reference code's outputs.

The expected values are the outputs of the reference code itself, kept (with repository,
commit and function) in ``tests/selectors/test_{aks,bolt,mdp3,focus}_reference.py``;
here they meet the command line a researcher would use, budgets above the pool included.
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


AKS = _load("test_aks_reference")
BOLT = _load("test_bolt_reference")
MDP3 = _load("test_mdp3_reference")
FOCUS = _load("test_focus_reference")


def _select(tmp_path: Path, selector: str, k: int, *extra: str, **arrays: np.ndarray) -> list[int]:
    args = ["select", "--selector", selector, "--k", str(k), "--param", "reference_exact=true", "--output", str(tmp_path / "out.json"), *extra]
    for name, value in arrays.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += [f"--{name}", str(tmp_path / f"{name}.npy")]
    assert main(args) == 0
    return list(json.loads((tmp_path / "out.json").read_text())["indices"])


@pytest.mark.parametrize("case", [(0, 10, 32, 1), (9, 50, 64, 1), (4, 256, 64, 1), (8, 300, 16, 1)], ids=str)
def test_aks(tmp_path: Path, case: tuple[int, int, int, int]) -> None:
    seed, n, k, _ = case
    assert _select(tmp_path, "aks", k, scores=AKS.scores_for(seed, n)) == AKS.EXPECTED[case]


def test_aks_ratio(tmp_path: Path) -> None:
    case = (0, 10, 32, 2)
    assert _select(tmp_path, "aks", 32, "--param", "ratio=2", scores=AKS.scores_for(0, 10)) == AKS.EXPECTED[case]


@pytest.mark.parametrize("case", [(0, 5, 8, -1.0), (5, 40, 128, 3.0), (6, 10, 64, 1.0), (3, 120, 17, 2.5)], ids=str)
def test_bolt(tmp_path: Path, case: tuple[int, int, int, float]) -> None:
    seed, n, k, power = case
    assert _select(tmp_path, "bolt", k, "--param", f"power={power}", scores=BOLT.scores_for(seed, n)) == BOLT.EXPECTED[case]


@pytest.mark.parametrize("case", [(0, 64, 128, 1, 8, -1), (8, 20, 128, 1, 32, -1), (9, 8, 512, 2, 8, -1), (6, 128, 256, 1, 16, 32)], ids=str)
def test_mdp3(tmp_path: Path, case: tuple[int, int, int, int, int, int]) -> None:
    seed, n, d, rows, k, segment = case
    emb, text = MDP3.inputs_for(seed, n, d, rows)
    # the command line takes one query row; _select_frames_fast reads the first
    extra = ("--param", f"segment_size={segment}") if segment > 0 else ()
    assert _select(tmp_path, "mdp3", k, *extra, embeddings=emb, text=text[0]) == MDP3.EXPECTED[case]


@pytest.mark.parametrize("case", [(0, 0.5, 16, "nearest"), (1, 1.0, 64, "nearest"), (2, 600.0, 32, "nearest"), (5, 47.3, 16, "linear")], ids=str)
def test_focus_with_the_drivers_generator(tmp_path: Path, case: tuple[int, float, int, str]) -> None:
    seed, seconds, k, method = case
    scores = FOCUS.scores_for(seed, seconds)
    times = np.arange(len(scores)) / FOCUS.FPS
    got = _select(tmp_path, "focus", k, "--seed", "42", "--param", f"interpolation_method={json.dumps(method)}", scores=scores, timestamps=times)
    assert got == FOCUS.EXPECTED[case]
