"""A Qwen2-VL / Qwen2.5-VL processor for lmms-eval's Qwen wrappers where torchvision is missing.

transformers 5 builds ``Qwen2VLProcessor`` and ``Qwen2_5_VLProcessor`` on their video
processors, which need torchvision; without it ``AutoProcessor.from_pretrained`` raises, so
lmms-eval's ``qwen2_vl`` / ``qwen2_5_vl`` models cannot even be created beside the CPU torch
(PyPI's torchvision is built for another torch). :class:`QwenProcessor` answers the calls those
models make of their processor (``apply_chat_template``, ``__call__(text=, images=, videos=,
padding=, return_tensors=)``, ``batch_decode``) with
:class:`frameselect.answerers._vlm_inputs.QwenVLInputs`, whose pixels equal transformers' PIL
path. The ``frameselect`` model of lmms-eval gives it to the base model only where torchvision
is missing; with torchvision the base model's own processor is used.

Videos arrive as qwen-vl-utils gives them (``(T, 3, H, W)`` float tensors of 0..255 values);
images are not supported (the Qwen video tasks give none).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from frameselect.answerers._vlm_inputs import QwenVideoConfig, QwenVLInputs, load_processor_dict, load_video_processor_dict

__all__ = ["QwenProcessor"]


class QwenProcessor:
    """What lmms-eval's Qwen wrappers use of ``AutoProcessor.from_pretrained(...)``, without torchvision.

    ``with_fps``: pass ``fps`` on as ``second_per_grid_ts`` (Qwen2.5-VL); Qwen2-VL takes none.
    """

    def __init__(self, inputs: QwenVLInputs, with_fps: bool = False) -> None:
        self.inputs = inputs
        self.tokenizer = inputs.tokenizer
        self.with_fps = with_fps

    @classmethod
    def from_pretrained(
        cls, pretrained: str, *, with_fps: bool = False, min_pixels: int | None = None, max_pixels: int | None = None, **_: Any
    ) -> QwenProcessor:
        """Tokenizer, video settings and chat template of a checkpoint; ``min_pixels``/``max_pixels`` override its own."""
        from transformers import AutoTokenizer

        config = QwenVideoConfig.from_dict(load_video_processor_dict(pretrained))
        config = dataclasses.replace(
            config,
            min_pixels=config.min_pixels if min_pixels is None else int(min_pixels),
            max_pixels=config.max_pixels if max_pixels is None else int(max_pixels),
        )
        template = load_processor_dict(pretrained).get("chat_template")
        return cls(QwenVLInputs(AutoTokenizer.from_pretrained(pretrained), config, template), with_fps=with_fps)

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        return self.inputs.apply_chat_template(messages, **kwargs)

    def batch_decode(self, sequences: Any, **kwargs: Any) -> list[str]:
        return [str(s) for s in self.tokenizer.batch_decode(sequences, **kwargs)]

    def decode(self, token_ids: Any, **kwargs: Any) -> str:
        return str(self.tokenizer.decode(token_ids, **kwargs))

    def __call__(
        self,
        text: str | Sequence[str] | None = None,
        images: Any = None,
        videos: Any = None,
        fps: Any = None,
        padding: Any = None,
        return_tensors: str | None = "pt",
        **_: Any,
    ) -> Any:
        texts = [text] if isinstance(text, str) else list(text or [])
        if images:
            raise ValueError("frameselect's Qwen processor (used where torchvision is missing) takes videos only, not images")
        if len(texts) != 1 or not videos or len(videos) != 1:
            raise ValueError(
                f"frameselect's Qwen processor (used where torchvision is missing) takes one prompt with one video; got {len(texts)} prompts "
                f"and {len(videos or [])} videos (run with batch_size=1)"
            )
        rate = fps[0] if isinstance(fps, list | tuple) else fps
        frames = _uint8_frames(videos[0])
        return self.inputs(texts[0], frames, fps=float(rate) if self.with_fps and rate is not None else None)


def _uint8_frames(video: Any) -> list[np.ndarray]:
    """``(T, 3, H, W)`` values 0..255 (tensor or array) as ``(H, W, 3)`` uint8 frames."""
    array = video.detach().cpu().numpy() if hasattr(video, "detach") else np.asarray(video)
    if array.ndim != 4 or array.shape[1] != 3:
        raise ValueError(f"a video must be (T, 3, H, W) frames, got shape {tuple(array.shape)}")
    return [np.ascontiguousarray(f) for f in np.clip(np.rint(array), 0, 255).astype(np.uint8).transpose(0, 2, 3, 1)]
