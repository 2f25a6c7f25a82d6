"""PEEK's scorer and selection against outputs of the reference code itself, with random weights of the released layout.

Expected values: github.com/momentslab/peek at commit a0df9fe0ddff4682adde9d08d77504dccd1e4ede:
``src/peek/model.py``: ``PeekScorer(embedding_dim=E, hidden_dim=H, num_heads=4, num_layers=L,
ffn_dim=F)`` loaded with ``load_peek_state_dict`` from :func:`weights`, in ``eval()`` under
``torch.inference_mode()``, called as ``score_frame_paths`` in ``src/peek/inference.py`` does
(``scorer(embeddings[None], ones mask)[0]``) on :func:`inputs`; then ``src/peek/selection.py``:
``stratified_argmax(scores, k)`` and ``topk_indices(scores, k)``. Scores rounded to 5 decimals.
``SEEDED``: ``torch.manual_seed(7); PeekScorer(embedding_dim=32)`` with the released sizes
(hidden 256, 2 layers, FFN 1024): the reference's own random initialisation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from frameselect.errors import ConfigError, SelectionError  # noqa: E402
from frameselect.selectors.peek import PEEK, build_scorer, peek_buckets, peek_scores, peek_stratified_argmax, peek_topk  # noqa: E402
from frameselect.types import CandidatePool, Features  # noqa: E402


def weights(seed: int, e: int, h: int, layers: int, f: int) -> dict[str, Any]:
    """Random tensors named and shaped as the reference's state dict (created here, in its key order)."""
    rng = np.random.default_rng(seed)
    shapes: list[tuple[str, tuple[int, ...]]] = [
        ("layer_norm.weight", (e,)),
        ("layer_norm.bias", (e,)),
        ("input_projection.weight", (h, e)),
        ("input_projection.bias", (h,)),
    ]
    for i in range(layers):
        p = f"transformer.layers.{i}."
        shapes += [
            (p + "self_attn.in_proj_weight", (3 * h, h)),
            (p + "self_attn.in_proj_bias", (3 * h,)),
            (p + "self_attn.out_proj.weight", (h, h)),
            (p + "self_attn.out_proj.bias", (h,)),
            (p + "linear1.weight", (f, h)),
            (p + "linear1.bias", (f,)),
            (p + "linear2.weight", (h, f)),
            (p + "linear2.bias", (h,)),
            (p + "norm1.weight", (h,)),
            (p + "norm1.bias", (h,)),
            (p + "norm2.weight", (h,)),
            (p + "norm2.bias", (h,)),
        ]
    shapes += [("score_head.weight", (1, h)), ("score_head.bias", (1,))]
    sd = {}
    for name, shp in shapes:
        if name.endswith(("norm.weight", "norm1.weight", "norm2.weight")):
            arr = 1 + rng.normal(0, 0.1, size=shp)
        elif len(shp) == 1:
            arr = rng.normal(0, 0.02, size=shp)
        else:
            arr = rng.normal(0, 1 / np.sqrt(shp[-1]), size=shp)
        sd[name] = torch.tensor(arr, dtype=torch.float32)
    return sd


def inputs(seed: int, t: int, e: int) -> np.ndarray:
    return np.random.default_rng(seed + 1000).normal(size=(t, e)).astype(np.float32)


#: (seed, T, E, H, L, F, k) -> (scores, stratified_argmax, topk_indices)
# fmt: off
EXPECTED: dict[tuple[int, int, int, int, int, int, int], tuple[list[float], list[int], list[int]]] = {
    (0, 24, 32, 16, 2, 32, 4): ([-1.30199, -0.97394, 1.2491, -0.40095, 1.47731, 1.8467, -0.57243, 0.05718, 1.84486, -0.69679, -0.28954, 2.82195, 0.59341, 2.31661, 0.0242, -0.31413, 0.83298, 1.663, -2.5358, -1.44986, 0.11933, 1.18536, 0.41119, 2.7819], [5, 11, 13, 23], [5, 11, 13, 23]),
    (1, 50, 64, 32, 1, 64, 8): ([-3.18141, 0.85816, 0.42493, 0.55777, -1.11633, -0.7496, -0.95014, -1.05632, -0.1365, -0.46332, 1.87659, -0.30475, -0.89642, -0.7075, -2.66374, -0.70269, -0.01386, -1.84273, 0.65136, 1.89206, -0.99891, -1.85567, -1.65107, 0.46538, 0.78969, 0.96804, -0.50636, -0.56126, -1.15242, 0.158, -0.71841, 1.05218, -0.30235, -1.19344, -1.29949, -0.82028, -1.10844, -2.13223, -0.48608, -0.34794, -1.1039, -0.32228, -1.46455, -0.46714, -0.37489, -0.0916, -1.54667, -0.47038, 0.10414, 2.03989], [1, 10, 16, 19, 25, 31, 41, 49], [1, 10, 18, 19, 24, 25, 31, 49]),
    (3, 7, 32, 16, 3, 48, 3): ([-0.70827, 0.20832, -0.44118, -0.55047, 2.1215, 0.94565, -1.4522], [1, 2, 4], [1, 4, 5]),
}
#: the released sizes (E 512, H 256, 2 layers, FFN 1024), T = 120, k = 16: first ten scores and both selections
RELEASED = (
    [-3.60669, -2.32639, -2.02978, -1.11373, 0.04009, -1.89221, -0.82332, -0.00607, -0.38239, -0.06843],
    [4, 7, 20, 29, 31, 38, 46, 56, 64, 72, 81, 84, 90, 97, 109, 114],
    [4, 7, 8, 9, 20, 21, 29, 31, 37, 38, 64, 71, 72, 84, 90, 91],
)
SEEDED = [0.36403, 0.15174, 0.59516, 0.0459, 0.43891, 1.05089, 1.02387, 0.24295, 0.50189, 0.37619, 0.87372, 0.00857]
# fmt: on


def scorer_for(seed: int, e: int, h: int, layers: int, f: int) -> Any:
    s = build_scorer(e, h, 4, layers, f)
    s.load_state_dict(weights(seed, e, h, layers, f))
    return s


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=str)
def test_scores_and_selections_match_the_reference(case: tuple[int, int, int, int, int, int, int]) -> None:
    seed, t, e, h, layers, f, k = case
    scores = peek_scores(scorer_for(seed, e, h, layers, f), inputs(seed, t, e))
    want, strat, top = EXPECTED[case]
    np.testing.assert_allclose(scores, want, atol=2e-5)
    assert peek_stratified_argmax(scores, k) == strat
    assert peek_topk(scores, k) == top


@pytest.mark.slow
def test_the_released_sizes_match_the_reference() -> None:
    scores = peek_scores(scorer_for(2, 512, 256, 2, 1024), inputs(2, 120, 512))
    np.testing.assert_allclose(scores[:10], RELEASED[0], atol=2e-5)
    assert peek_stratified_argmax(scores, 16) == RELEASED[1]
    assert peek_topk(scores, 16) == RELEASED[2]


def test_one_torch_seed_initialises_as_the_reference_does() -> None:
    torch.manual_seed(7)
    scores = peek_scores(build_scorer(32), inputs(5, 12, 32))
    np.testing.assert_allclose(scores, SEEDED, atol=2e-5)


def test_stratified_argmax_by_hand() -> None:
    # 7 frames, 3 buckets: [0, 2), [2, 4), [4, 7); the tie 0.5 / 0.5 in bucket one goes to frame 1
    assert peek_buckets(7, 3) == [(0, 2), (2, 4), (4, 7)]
    assert peek_stratified_argmax([0.1, 0.5, 0.5, 0.2, 0.9, 0.0, 0.3], 3) == [1, 2, 4]
    assert peek_stratified_argmax([1.0, 2.0], 5) == [0, 1]  # reference: the same (min(n, k) buckets)
    assert peek_stratified_argmax([3.0, 1.0, 2.0], 1) == [0]  # k = 1: the plain argmax
    assert peek_topk([0.2, 0.9, 0.9, 0.1], 2) == [1, 2]


def test_selector_reads_a_released_style_file_and_selects(tmp_path: Path) -> None:
    safetensors_torch = pytest.importorskip("safetensors.torch")
    path = tmp_path / "peek_base.safetensors"
    safetensors_torch.save_file(weights(0, 32, 16, 2, 32), str(path))
    pool = CandidatePool.from_timestamps(np.arange(24, dtype=np.float64))
    emb = inputs(0, 24, 32)
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)  # the LayerNorm makes the scorer blind to scale
    for feats in (emb, unit):
        sel = PEEK(weights=str(path), heads=4).select(pool, None, 4, Features(embeddings=feats))
        assert list(sel.indices) == [5, 11, 13, 23]
    top = PEEK(weights=str(path), mode="topk").select(pool, None, 4, Features(embeddings=emb))
    assert list(top.indices) == [5, 11, 13, 23]


def test_training_checkpoint_layout_is_read(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    torch.save({"model": weights(1, 64, 32, 1, 64), "epoch": 3}, str(path))
    pool = CandidatePool.from_timestamps(np.arange(50, dtype=np.float64))
    sel = PEEK(weights=str(path)).select(pool, None, 8, Features(embeddings=inputs(1, 50, 64)))
    assert list(sel.indices) == [1, 10, 16, 19, 25, 31, 41, 49]


def test_wrong_inputs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mode"):
        PEEK(mode="best")
    path = tmp_path / "w.pt"
    torch.save(weights(0, 32, 16, 2, 32), str(path))
    pool = CandidatePool.from_timestamps(np.arange(5, dtype=np.float64))
    with pytest.raises(SelectionError, match="32-d"):
        PEEK(weights=str(path)).select(pool, None, 2, Features(embeddings=np.ones((5, 8), dtype=np.float32)))
    bad = tmp_path / "bad.pt"
    torch.save({"score_head.weight": torch.zeros(1, 4)}, str(bad))
    with pytest.raises(SelectionError, match="missing tensor"):
        PEEK(weights=str(bad)).select(pool, None, 2, Features(embeddings=np.ones((5, 8), dtype=np.float32)))
    with pytest.raises(SelectionError, match="no such file"):
        PEEK(weights=str(tmp_path / "absent.safetensors")).select(pool, None, 2, Features(embeddings=np.ones((5, 8), dtype=np.float32)))


def test_without_weights_it_is_random_and_the_benchmark_skips_it() -> None:
    assert PEEK().requires_weights and not PEEK(weights="x.safetensors").requires_weights
    pool = CandidatePool.from_timestamps(np.arange(30, dtype=np.float64))
    sel = PEEK().select(pool, None, 6, Features(embeddings=inputs(3, 30, 16)))
    assert len(sel.indices) == 6
