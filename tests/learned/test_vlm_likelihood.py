"""A transformers VLM's option log-probabilities: one forward pass, log-softmax over the letters' tokens."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).parent))
from learned_helpers import tiny_qwen2_vl  # noqa: E402

from frameselect.answerers.base import AnswerRequest  # noqa: E402
from frameselect.types import CandidatePool, InMemoryFrames, Query, Sample, Selection  # noqa: E402


def _request(picked: tuple[int, ...]) -> AnswerRequest:
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, size=(48, 64, 3), dtype=np.uint8) for _ in range(10)]
    pool = CandidatePool(
        video_id="vid", timestamps=np.arange(10) + 0.5, frame_indices=np.arange(10) * 25, policy="fps=1.0", duration=10.0, source=InMemoryFrames(frames)
    )
    sample = Sample("s", "v.mp4", Query("What colour is the car?", ("red", "blue", "green")), "B")
    return AnswerRequest(sample, pool, Selection(indices=picked))


def test_option_logprobs_are_the_letters_next_token_distribution() -> None:
    vlm = tiny_qwen2_vl()
    assert vlm.has_option_logprobs
    (lp,) = vlm.option_logprobs([_request((1, 4, 6, 9))])
    assert lp.shape == (3,) and np.exp(lp).sum() == pytest.approx(1.0)
    # reference: the full vocabulary's log-softmax at the last prompt position, renormalised over A, B, C
    _, inputs = vlm.prepare(_request((1, 4, 6, 9)))
    tokenizer = vlm._processor.tokenizer
    letters = [tokenizer.convert_tokens_to_ids(c) for c in "ABC"]
    with torch.no_grad():
        full = torch.log_softmax(vlm._model(**inputs).logits[0, -1].double(), dim=-1)[letters]
    expected = (full - torch.logsumexp(full, dim=0)).numpy()
    np.testing.assert_allclose(lp, expected, atol=1e-5)
    (other,) = vlm.option_logprobs([_request((0, 2))])
    assert not np.allclose(other, lp)  # other frames, other likelihoods
