"""TSPO's temporal agent against outputs of the reference code itself, with random weights of the released layout.

Expected values: github.com/Hui-design/TSPO at commit 19f4ecb2331bd1914fe06e96d35d0408bc866512,
``model/temporal_agent.py``: ``MultiModal_Align(dim, num_heads)`` loaded with the state dict of
:func:`weights`, ``forward(image, text, clip_scores, window_size)`` in float32 on CPU with
``clip_scores = CosineSimilarity(dim=-1)(text, image)``, then ``TSPOModel.inference_ts`` with
``"topk"`` and ``"bin-max"``. Scores were rounded to 5 decimals. dim=768 with 8 heads is the
released agent's shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from frameselect.errors import SelectionError  # noqa: E402
from frameselect.selectors.tspo import TSPO, build_agent, load_agent_weights, tspo_bin_max, tspo_scores, tspo_topk  # noqa: E402
from frameselect.testing import check_selector  # noqa: E402
from frameselect.types import CandidatePool, Features  # noqa: E402


def weights(seed: int, dim: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    sd = {}
    for name in ["temporal.Self_q", "temporal.Self_k", "temporal.Self_v", "temporal.ffn_o", "mlp.0", "mlp.2"]:
        sd[name + ".weight"] = torch.tensor(rng.normal(0, 1 / np.sqrt(dim), size=(dim, dim)), dtype=torch.float32)
        sd[name + ".bias"] = torch.tensor(rng.normal(0, 0.02, size=dim), dtype=torch.float32)
    return sd


def inputs(seed: int, t: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + 1000)
    return rng.normal(size=(t, dim)).astype(np.float32), rng.normal(size=(1, dim)).astype(np.float32)


REFERENCE: list[dict[str, Any]] = [
    dict(seed=0, t=40, dim=768, k=8, window=12, heads=8,
         score=[1.23398, -2.60396, -0.61514, -1.79525, 0.80304, -0.10665, -0.20301, 2.02928, 4.44333, 3.31395, -0.73347, -1.15853, 1.77121, 9.12403, 1.95576, -1.14965, 3.11569, 1.40165, 2.33782, 7.02123, 1.76461, 3.65576, 0.11085, 2.63382, -5.61593, 4.95977, 1.79745, -2.394, 1.1346, -2.17782, 4.08875, -0.81174, 1.57662, 0.56251, -0.73471, 2.45318, 3.51521, -1.61424, 1.83866, -1.77458],
         topk=[8, 9, 13, 19, 21, 25, 30, 36],
         binmax=[0, 8, 13, 19, 25, 30, 36, 38]),
    dict(seed=1, t=100, dim=768, k=16, window=12, heads=8,
         score=[4.11378, -1.15234, 3.07909, 2.09335, 1.14261, -1.72873, 2.57941, 1.34463, -1.61295, -3.0046, 2.38338, -1.0159, 4.702, -0.68796, -0.11092, 5.78611, -5.4715, -3.80633, -4.39975, -0.80648, 4.94254, 1.58236, 0.86211, 3.48451, 0.89233, 1.69705, 1.54342, -0.3206, 0.70802, 0.00902, 1.15665, 2.63877, 2.66637, 1.49283, 3.47129, -0.96837, -1.90743, 2.21244, -0.40771, 2.8357, 1.22984, 1.61801, 1.04275, -0.53401, 0.77383, -4.36299, 3.21638, 5.31016, 1.61531, -1.278, -1.55925, 1.29932, 1.65181, -0.14088, 2.73316, -2.3037, 3.15006, 1.20438, 5.47946, 3.58155, -2.64128, -4.21044, 2.43133, 5.99378, 2.76646, 0.68312, -3.00159, -3.66477, 3.52508, -1.86608, 2.13654, 0.88609, -0.4576, -0.63496, -0.99542, 1.94066, -0.19927, 2.01885, -0.70467, 1.93208, -4.01706, 0.51042, -0.09101, -2.39382, 1.83141, 1.23279, 1.17529, -2.77318, 3.28454, 0.67195, -3.45698, -0.92994, 0.79137, -6.9813, 1.69006, 0.72863, -0.2772, 1.08729, -1.07381, 3.31155],
         topk=[0, 2, 12, 15, 20, 23, 34, 46, 47, 56, 58, 59, 63, 68, 88, 99],
         binmax=[0, 6, 15, 20, 25, 34, 39, 47, 56, 58, 63, 70, 77, 88, 94, 99]),
    dict(seed=2, t=30, dim=64, k=10, window=4, heads=8,
         score=[-0.64708, -10.07332, -18.07183, 1.64937, -3.92867, -5.0787, 18.96736, -0.59427, 12.68311, -11.30266, -6.84699, -7.54326, 3.60297, 3.45312, 5.43365, 0.48993, 10.29092, 5.36144, 6.59302, 11.30655, -4.24204, 4.27867, 6.57067, -2.83297, -1.10149, 3.73214, 21.72286, 10.76137, -1.45786, 0.79869],
         topk=[6, 8, 14, 16, 17, 18, 19, 22, 26, 27],
         binmax=[0, 3, 6, 10, 14, 16, 19, 22, 26, 29]),
    dict(seed=3, t=25, dim=32, k=25, window=8, heads=4,
         score=[-11.39582, -8.22443, 9.08987, 11.03107, 18.4227, 7.93352, 0.50138, 8.0278, -30.71788, 14.06626, 29.27285, 17.7171, 14.2978, 23.95548, 16.74254, -10.73065, 12.81244, -0.09036, 10.73869, -2.15058, 33.07456, -8.90151, -18.7287, 4.38145, -6.32543],
         topk=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24],
         binmax=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]),
    dict(seed=4, t=64, dim=16, k=7, window=5, heads=2,
         score=[7.25846, 10.44641, 15.46529, -7.37358, 20.56372, 27.94712, 15.86123, 9.23151, 5.60266, -23.0151, -7.04909, 18.70399, 2.78496, 39.02503, 1.33753, 13.75004, -1.68409, -10.6242, 9.60526, 4.34692, 13.38599, 31.22936, 0.60061, -5.99871, -16.69629, 8.06012, -15.99405, 15.42595, 28.24286, -25.11131, 29.53214, -13.18774, -10.1257, 19.14152, -28.14141, -0.2195, -14.15962, 17.57943, 21.09232, -21.93559, 9.49408, 24.95105, -9.47633, -15.65081, 17.85899, -17.61535, 41.45652, 14.65805, -8.14117, -5.94877, -21.51049, 16.14381, 4.8565, 12.63295, -2.00624, 9.11265, 18.99534, 19.2307, 30.68547, -22.66405, -12.9196, -1.27105, 14.94681, 14.52141],
         topk=[5, 13, 21, 28, 30, 46, 58],
         binmax=[5, 13, 21, 30, 46, 57, 58]),
]  # fmt: skip


@pytest.mark.parametrize("case", REFERENCE, ids=lambda c: f"seed{c['seed']}-t{c['t']}-d{c['dim']}-k{c['k']}")
def test_matches_the_reference_code(case: dict[str, Any]) -> None:
    agent = build_agent(case["dim"], case["heads"])
    agent.load_state_dict(weights(case["seed"], case["dim"]))
    image, text = inputs(case["seed"], case["t"], case["dim"])
    scores = tspo_scores(agent, image, text[0], case["window"])
    assert scores == pytest.approx(case["score"], abs=2e-4)
    assert tspo_topk(scores, case["k"]) == case["topk"]
    assert tspo_bin_max(scores, case["k"]) == case["binmax"]


def test_released_layout_loads_by_name(tmp_path: Path) -> None:
    save_file = pytest.importorskip("safetensors.torch").save_file

    case = REFERENCE[0]
    state = {f"multiModal_align.{k}": v for k, v in weights(case["seed"], 768).items()}
    state["clip.unrelated.weight"] = torch.zeros(2)
    path = tmp_path / "agent.safetensors"
    save_file(state, str(path))
    assert sorted(load_agent_weights(path)) == sorted(weights(0, 768))
    image, text = inputs(case["seed"], case["t"], 768)
    pool = CandidatePool.from_timestamps(np.arange(case["t"], dtype=float))
    f = Features(embeddings=image, text=text[0])
    assert list(TSPO(weights=str(path)).select(pool, None, case["k"], f).indices) == case["topk"]
    assert list(TSPO(weights=str(path), method="bin-max").select(pool, None, case["k"], f).indices) == case["binmax"]
    del state["multiModal_align.mlp.2.bias"]
    save_file(state, str(path))
    with pytest.raises(SelectionError, match="missing tensors"):
        load_agent_weights(path)
    with pytest.raises(SelectionError, match="no such file"):
        load_agent_weights(tmp_path / "none.safetensors")


def test_hand_worked_bins() -> None:
    # 7 frames, 3 proposals at 0, 3, 6: frames 0-1 | 2-4 (2 is nearer 3) | 5-6; frame 1.5 would tie and go to the earlier bin
    assert tspo_bin_max(np.array([1.0, 2.0, 5.0, 0.0, 5.0, 1.0, 0.5]), 3) == [1, 2, 5]
    assert tspo_topk(np.array([1.0, 2.0, 5.0, 0.0, 4.0]), 2) == [2, 4]


def test_random_agent_is_flagged_and_conforms() -> None:
    assert TSPO().requires_weights and not TSPO(weights="agent.safetensors").requires_weights
    check_selector("tspo")
    check_selector("tspo", params={"method": "bin-max"})


def test_bench_skips_it_without_weights_and_takes_the_training_free_ones() -> None:
    from frameselect._studies.bench.runner import _selectors

    class TextEncoder:
        id = "synthetic()"
        has_text = True

    notes: list[str] = []
    chosen = [name for name, _ in _selectors(["tspo", "tstar", "vsls", "qca", "dig"], TextEncoder(), notes)]
    assert chosen == ["dig", "qca", "tstar", "vsls"]
    assert notes == ["skipped tspo: a trained selector without its weights (pass weights=... to run it)"]
