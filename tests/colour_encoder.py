"""A cheap text-capable encoder for tests of query-aware parts: a frame's mean colour; any text maps to one colour direction."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from frameselect.encoders.base import Encoder


class MeanColour(Encoder):
    """Frames as their mean colour (plus one, normalised), every query as the direction (1, 0.5, 0.25): relevance is how warm a frame is."""

    has_text = True

    def encode_frames(self, frames: np.ndarray) -> np.ndarray:
        e = frames.reshape(len(frames), -1, 3).mean(axis=1) + 1.0
        return (e / np.linalg.norm(e, axis=1, keepdims=True)).astype(np.float32)

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        t = np.array([[1.0, 0.5, 0.25]] * len(texts))
        return (t / np.linalg.norm(t, axis=1, keepdims=True)).astype(np.float32)
