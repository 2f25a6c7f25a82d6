"""``python -m lmms_eval`` with what reaches the Qwen model's ``generate`` written down.

Run with the lmms-eval environment's python and lmms-eval's command-line arguments. Each call
of ``generate`` appends one JSON line to ``$FS_GENERATE_LOG``: the count of video placeholder
tokens in ``input_ids``, ``video_grid_thw``, and per frame the mean of the first colour
channel of ``pixel_values_videos`` (normalised values). ``$FS_FRAMESELECT_VERSION``, when
set, stands in for another frameselect release (its defaults may differ).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from typing import Any

import transformers

LOG = os.environ["FS_GENERATE_LOG"]


def _recording(cls: Any) -> None:
    original = cls.generate

    def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        ids = kwargs["input_ids"]
        grid = kwargs["video_grid_thw"]
        t, h, w = (int(v) for v in grid[0])
        temporal = int(self.config.vision_config.temporal_patch_size)
        patch = int(self.config.vision_config.patch_size)
        pixels = kwargs["pixel_values_videos"].reshape(t, h * w, 3, temporal, patch, patch)
        means = [float(pixels[i // temporal, :, 0, i % temporal].mean()) for i in range(t * temporal)]
        record = {"video_tokens": int((ids == self.config.video_token_id).sum()), "grid": [t, h, w], "channel0_means": means}
        with open(LOG, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        return original(self, *args, **kwargs)

    cls.generate = generate


_recording(transformers.Qwen2VLForConditionalGeneration)
if os.environ.get("FS_FRAMESELECT_VERSION"):
    import frameselect.integrations.bridge as bridge

    bridge.__version__ = os.environ["FS_FRAMESELECT_VERSION"]
sys.argv = ["lmms_eval", *sys.argv[1:]]
runpy.run_module("lmms_eval", run_name="__main__")
