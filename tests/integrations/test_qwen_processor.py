"""frameselect's Qwen processor for lmms-eval's Qwen wrappers where torchvision is missing."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from frameselect.answerers._vlm_inputs import QwenVideoConfig  # noqa: E402
from frameselect.integrations.qwen_processor import QwenProcessor  # noqa: E402


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = importlib.util.spec_from_file_location("tiny_hf_vlms", Path(__file__).with_name("_tiny_hf_vlms.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path_factory.mktemp("tiny-qwen2-vl")
    module.build("qwen2_vl", out)
    return out


def _video(levels: list[int]) -> Any:
    """(T, 3, 56, 56) float frames of grey levels, as qwen-vl-utils gives them."""
    return torch.stack([torch.full((3, 56, 56), float(v)) for v in levels])


def _prompt(processor: QwenProcessor) -> str:
    messages = [{"role": "user", "content": [{"type": "video", "video": "v.mp4"}, {"type": "text", "text": "what colour?"}]}]
    return str(processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))


def test_reads_the_checkpoint_and_overrides_its_pixel_bounds(checkpoint: Path) -> None:
    processor = QwenProcessor.from_pretrained(str(checkpoint), max_pixels=28 * 28 * 4, min_pixels=28 * 28)
    assert processor.inputs.config == QwenVideoConfig(
        min_pixels=784,
        max_pixels=3136,
        image_mean=(0.48145466, 0.4578275, 0.40821073),
        image_std=(0.26862954, 0.26130258, 0.27577711),
    )
    assert _prompt(processor).count("<|video_pad|>") == 1


def test_a_video_becomes_qwen2_vl_inputs(checkpoint: Path) -> None:
    processor = QwenProcessor.from_pretrained(str(checkpoint))
    inputs = processor(text=[_prompt(processor)], videos=[_video([0, 60, 140, 220])], padding=True, return_tensors="pt", padding_side="right")
    # 4 frames of 56x56: 2 temporal patches of 4x4 patches, merged 2x2 -> 8 placeholder tokens
    assert int((inputs["input_ids"] == processor.inputs.video_token_id).sum()) == 8
    assert inputs["video_grid_thw"].tolist() == [[2, 4, 4]]
    assert "second_per_grid_ts" not in inputs  # Qwen2-VL takes none
    # the pixels are those of frameselect's QwenVLInputs on the same uint8 frames
    frames = [np.full((56, 56, 3), v, np.uint8) for v in (0, 60, 140, 220)]
    reference, grid = processor.inputs.config.video(frames)
    assert grid == (2, 4, 4)
    assert np.array_equal(inputs["pixel_values_videos"].numpy(), reference)
    # first channel of frame 1 (temporal index 1 of patch 0): (60/255 - mean) / std
    first = inputs["pixel_values_videos"].reshape(2, 16, 3, 2, 14, 14)[0, :, 0, 1]
    assert float(first.mean()) == pytest.approx((60 / 255 - 0.48145466) / 0.26862954, abs=1e-6)


def test_qwen2_5_vl_gets_second_per_grid_ts_from_fps(checkpoint: Path) -> None:
    processor = QwenProcessor.from_pretrained(str(checkpoint), with_fps=True)
    inputs = processor(text=[_prompt(processor)], videos=[_video([0, 60, 140, 220])], fps=[0.5])
    assert inputs["second_per_grid_ts"].tolist() == [4.0]  # temporal patch of 2 frames at 0.5 fps


def test_refuses_what_it_cannot_do(checkpoint: Path) -> None:
    processor = QwenProcessor.from_pretrained(str(checkpoint))
    prompt = _prompt(processor)
    with pytest.raises(ValueError, match="videos only, not images"):
        processor(text=[prompt], images=[object()], videos=[_video([0, 0])])
    with pytest.raises(ValueError, match="one prompt with one video; got 2 prompts and 1 videos \\(run with batch_size=1\\)"):
        processor(text=[prompt, prompt], videos=[_video([0, 0])])
    with pytest.raises(ValueError, match=r"must be \(T, 3, H, W\)"):
        processor(text=[prompt], videos=[torch.zeros(2, 56, 56)])
