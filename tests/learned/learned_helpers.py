"""Small parts for the learned-selector tests: a cheap text-capable encoder and a tiny random Qwen2-VL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.encoders.base import Encoder, l2_normalize

COLOURS = {"red": (220, 40, 40), "green": (40, 180, 60), "blue": (40, 70, 220), "yellow": (230, 210, 40), "white": (255, 255, 255), "black": (0, 0, 0)}


class ColourText(Encoder):
    """Frames: mean colour of the centre and of the whole frame; text: the colours it names."""

    registered_name = "test_colour_text"
    has_text = True

    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        f = frames.astype(np.float32) / 255.0
        h, w = f.shape[1:3]
        centre = f[:, h // 3 : 2 * h // 3, w // 3 : 2 * w // 3].mean(axis=(1, 2))
        return l2_normalize(np.concatenate([centre, f.mean(axis=(1, 2))], axis=1) + 1e-3)

    def encode_text(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = []
        for t in texts:
            named = [np.array(c, dtype=np.float32) / 255.0 for name, c in COLOURS.items() if name in t.lower()]
            v = np.mean(named, axis=0) if named else np.ones(3, dtype=np.float32)
            out.append(np.concatenate([v, v]))
        return l2_normalize(np.stack(out) + 1e-3)


def tiny_qwen2_vl(seed: int = 0) -> Any:
    """A randomly initialised Qwen2-VL built from a config (tests/hub/test_vlm.py's), with the torchvision-free input builder."""
    from frameselect.answerers._vlm_inputs import QwenVideoConfig, QwenVLInputs
    from frameselect.answerers.transformers_vlm import Qwen2VL
    from part_examples import _vlm_helpers

    h = _vlm_helpers()
    processor = QwenVLInputs(h._qwen_tokenizer(), QwenVideoConfig(min_pixels=h.SIDE * h.SIDE, max_pixels=h.SIDE * h.SIDE), chat_template=h.QWEN_TEMPLATE)
    return Qwen2VL(model=h._qwen_model("qwen2_vl", processor.tokenizer, seed), processor=processor, max_new_tokens=2)
