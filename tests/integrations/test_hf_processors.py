"""The torchvision-free LLaVA-OneVision / InternVL processors of the lmms-eval bridge, on hand-computed cases."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

from frameselect.integrations.hf_processors import FrameVideoProcessor, load_processor  # noqa: E402
from frameselect.tokens import visual_tokens  # noqa: E402

HERE = Path(__file__).resolve().parent
MEAN0, STD0 = 0.48145466, 0.26862954


def test_frames_are_resized_rescaled_and_normalised_in_order() -> None:
    frames = np.stack([np.full((48, 64, 3), g, np.uint8) for g in (0, 51, 255)])
    out = FrameVideoProcessor(size={"height": 56, "width": 56})(videos=[frames], return_tensors="np")["pixel_values_videos"]
    assert out.shape == (1, 3, 3, 56, 56)
    # a constant frame stays constant through the resize: (g / 255 - mean) / std per channel
    assert out[0, :, 0].mean(axis=(1, 2)) == pytest.approx([(g / 255 - MEAN0) / STD0 for g in (0, 51, 255)], abs=1e-4)


@pytest.mark.parametrize("kwargs", [{"do_sample_frames": True}, {"num_frames": 8}, {"fps": 1.0}])
def test_sampling_is_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="does not sample"):
        FrameVideoProcessor()(videos=[np.zeros((2, 8, 8, 3), np.uint8)], **kwargs)


def test_a_path_is_refused() -> None:
    with pytest.raises(ValueError, match="not a path"):
        FrameVideoProcessor()(videos=["clip.mp4"])


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "family", "params"), [
    ("llava_onevision", "llava_onevision", {"num_image_tokens": 16, "size": {"height": 56, "width": 56}}),
    ("internvl", "internvl", {"image_seq_length": 4, "size": {"height": 56, "width": 56}}),
])  # fmt: skip
def test_the_model_processor_expands_the_prompt_for_the_frames_given(tmp_path: Path, kind: str, family: str, params: dict[str, object]) -> None:
    subprocess.run([sys.executable, str(HERE / "_tiny_hf_vlms.py"), kind, str(tmp_path)], check=True, capture_output=True, timeout=600)
    processor = load_processor(str(tmp_path))
    messages = [{"role": "user", "content": [{"type": "video", "url": "v.mp4"}, {"type": "text", "text": "what colour?"}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    frames = np.zeros((3, 48, 64, 3), np.uint8)
    ids = processor(text=text, videos=[frames], return_tensors="pt")["input_ids"]
    token = "<video>" if kind == "llava_onevision" else "<IMG_CONTEXT>"
    # hand-computed: LLaVA-OneVision 2x2 pooled tokens a frame + 1 newline = 13; InternVL 4 a frame = 12
    assert int((ids == processor.tokenizer.convert_tokens_to_ids(token)).sum()) == {"llava_onevision": 13, "internvl": 12}[kind]
    assert visual_tokens(family, [(48, 64)] * 3, **params) == {"llava_onevision": 13, "internvl": 12}[kind]
