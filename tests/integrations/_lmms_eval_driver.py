"""``python -m lmms_eval`` with what reaches the Qwen model's ``generate`` written down.

Run with the lmms-eval environment's python and lmms-eval's command-line arguments. Each call
of ``generate`` appends one JSON line to ``$FS_GENERATE_LOG``: the count of visual placeholder
tokens in ``input_ids`` and per frame the mean of the first colour channel of the pixel values
(normalised); for the Qwen family also ``video_grid_thw`` and ``second_per_grid_ts``. ``$FS_FRAMESELECT_VERSION``, when
set, stands in for another frameselect release (its defaults may differ).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from typing import Any


class _Blocked:
    """``$FS_BLOCK_MODULES`` (comma-separated): modules made impossible to find or import, as if not installed."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if os.environ.get("FS_BLOCK_MODULES"):
    sys.meta_path.insert(0, _Blocked(set(os.environ["FS_BLOCK_MODULES"].split(","))))

import transformers  # noqa: E402

LOG = os.environ["FS_GENERATE_LOG"]


def _qwen(self: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    ids = kwargs["input_ids"]
    grid = kwargs["video_grid_thw"]
    t, h, w = (int(v) for v in grid[0])
    temporal = int(self.config.vision_config.temporal_patch_size)
    patch = int(self.config.vision_config.patch_size)
    pixels = kwargs["pixel_values_videos"].reshape(t, h * w, 3, temporal, patch, patch)
    means = [float(pixels[i // temporal, :, 0, i % temporal].mean()) for i in range(t * temporal)]
    record = {"video_tokens": int((ids == self.config.video_token_id).sum()), "grid": [t, h, w], "channel0_means": means}
    if kwargs.get("second_per_grid_ts") is not None:
        record["second_per_grid_ts"] = [float(v) for v in kwargs["second_per_grid_ts"]]
    return record


def _per_frame(self: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """LLaVA-OneVision (``pixel_values_videos`` of one video) and InternVL (``pixel_values``, a tile a frame)."""
    ids = kwargs["input_ids"]
    if kwargs.get("pixel_values_videos") is not None:
        frames, token = kwargs["pixel_values_videos"][0], self.config.video_token_id
    else:
        frames, token = kwargs["pixel_values"], self.config.image_token_id
    means = [float(f[0].float().mean()) for f in frames]
    return {"video_tokens": int((ids == token).sum()), "frame_shape": list(frames.shape[-2:]), "channel0_means": means}


def _recording(cls: Any, describe: Any) -> None:
    original = cls.generate

    def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        record = describe(self, kwargs)
        with open(LOG, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        return original(self, *args, **kwargs)

    cls.generate = generate


_recording(transformers.Qwen2VLForConditionalGeneration, _qwen)
_recording(transformers.Qwen2_5_VLForConditionalGeneration, _qwen)
_recording(transformers.LlavaOnevisionForConditionalGeneration, _per_frame)
_recording(transformers.InternVLForConditionalGeneration, _per_frame)
if os.environ.get("FS_FRAMESELECT_VERSION"):
    import frameselect.integrations.bridge as bridge

    bridge.__version__ = os.environ["FS_FRAMESELECT_VERSION"]
sys.argv = ["lmms_eval", *sys.argv[1:]]
runpy.run_module("lmms_eval", run_name="__main__")
