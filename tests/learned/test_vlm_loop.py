"""The whole loop with a transformers VLM as the answerer (a tiny random Qwen2-VL built from a config):
likelihoods → rewards → update → checkpoint → selection. ``--device cuda`` runs the same code on a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).parent))
from learned_helpers import ColourText, tiny_qwen2_vl  # noqa: E402

from frameselect._engine.pipeline import evaluate  # noqa: E402
from frameselect._studies.learned.api import setup, train  # noqa: E402
from frameselect._studies.learned.train import TrainConfig  # noqa: E402
from frameselect.learned.checkpoint import load_tensors  # noqa: E402
from frameselect.selectors.learned import BayesGRPO  # noqa: E402


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))])
def test_training_with_a_transformers_vlm_runs_the_whole_loop(tiny, tmp_path: Path, device: str) -> None:  # type: ignore[no-untyped-def]
    vlm = tiny_qwen2_vl()
    if device != "cpu":
        vlm.device = device
    run = setup(tiny, encoder=ColourText(), answerer=vlm, test_fraction=0.5, cache_dir=tmp_path / "features", device=device)
    config = TrainConfig(budgets=(4,), prior_epochs=1, grpo_epochs=1, group_size=3, inner_steps=1, device=device)
    result, _ = train(run, tmp_path / "vlm.safetensors", config, store=tmp_path / "train.sqlite")
    rows = result.curves["grpo"]
    assert len(rows) == len(run.train_samples)
    # rewards are the VLM's log-probabilities of the right option: finite, negative, not all the same
    rewards = [r["reward"] for r in rows]
    assert all(np.isfinite(rewards)) and max(rewards) < 0 and len({round(r, 9) for r in rewards}) > 1
    tensors, meta = load_tensors(result.checkpoint)
    updated = any(r["kl"] > 0 for r in rows[1:]) or any(
        not np.array_equal(tensors[k], tensors["prior" + k[len("posterior") :]]) for k in tensors if k.startswith("posterior.")
    )
    assert updated, "stage 2 left the policy at the prior"
    assert "qwen2_vl(" in meta["config"]
    res = evaluate(BayesGRPO(str(result.checkpoint)), ["mc_accuracy"], run.test_samples, 4, encoder=ColourText(), answerer=vlm, cache_dir=tmp_path / "features")
    assert res.table["n"] == len(run.test_samples) and res.table["failed"] == 0
