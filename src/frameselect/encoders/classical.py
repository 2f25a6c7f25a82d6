"""Two cheap classical frame encoders (numpy only, no text side)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from frameselect.encoders.base import Encoder, l2_normalize
from frameselect.parts import Range
from frameselect.registry import encoders

__all__ = ["ColorHistogram", "Thumbnail", "color_histogram", "thumbnail"]


def color_histogram(frames: NDArray[np.uint8], bins: int = 8) -> NDArray[np.float32]:
    """Joint RGB histogram with ``bins`` levels per channel, as a Hellinger embedding.

    Each histogram is L1-normalised, square-rooted and so has unit L2 norm:
    the dot product of two embeddings is the Bhattacharyya coefficient of the
    two colour distributions.
    """
    frames = np.asarray(frames)
    if frames.ndim == 3:
        frames = frames[None]
    q = (frames.astype(np.uint16) * bins) >> 8  # 0..bins-1 per channel
    codes = (q[..., 0] * bins + q[..., 1]) * bins + q[..., 2]
    flat = codes.reshape(codes.shape[0], -1)
    hist = np.stack([np.bincount(row, minlength=bins**3) for row in flat]).astype(np.float64)
    hist /= np.maximum(hist.sum(axis=1, keepdims=True), 1.0)
    out: NDArray[np.float32] = np.sqrt(hist).astype(np.float32)
    return out


def _area_resize_gray(frame: NDArray[np.uint8], size: int) -> NDArray[np.float64]:
    gray = frame[..., :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    h, w = gray.shape
    rows = np.linspace(0, h, size + 1).astype(int)
    cols = np.linspace(0, w, size + 1).astype(int)
    # mean over each block via cumulative sums (exact area averaging)
    c = np.zeros((h + 1, w + 1))
    c[1:, 1:] = gray.cumsum(0).cumsum(1)
    total = c[rows[1:, None], cols[None, 1:]] - c[rows[:-1, None], cols[None, 1:]] - c[rows[1:, None], cols[None, :-1]] + c[rows[:-1, None], cols[None, :-1]]
    area = np.maximum(np.diff(rows)[:, None] * np.diff(cols)[None, :], 1)
    out: NDArray[np.float64] = total / area
    return out


def thumbnail(frames: NDArray[np.uint8], size: int = 16) -> NDArray[np.float32]:
    """Luma downscaled to ``size``×``size`` by area averaging, mean-centred, L2-normalised.

    The dot product of two embeddings is the Pearson correlation of the two
    thumbnails (0 for a flat frame).
    """
    frames = np.asarray(frames)
    if frames.ndim == 3:
        frames = frames[None]
    out = np.stack([_area_resize_gray(f, size).ravel() for f in frames])
    out -= out.mean(axis=1, keepdims=True)
    return l2_normalize(out)


@encoders.register("color_histogram")
class ColorHistogram(Encoder):
    """Joint RGB histogram (``bins``³ dimensions), Hellinger-normalised."""

    param_ranges = {"bins": Range(ge=2, le=32, integer=True)}

    def __init__(self, bins: int = 8) -> None:
        if not 2 <= bins <= 32:
            raise ValueError(f"bins must be in [2, 32], got {bins}")
        self.bins = bins

    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        return color_histogram(frames, self.bins)


@encoders.register("thumbnail")
class Thumbnail(Encoder):
    """Downscaled luma thumbnail (``size``² dimensions), mean-centred and L2-normalised."""

    param_ranges = {"size": Range(ge=2, le=128, integer=True)}

    def __init__(self, size: int = 16) -> None:
        if not 2 <= size <= 128:
            raise ValueError(f"size must be in [2, 128], got {size}")
        self.size = size

    def encode_frames(self, frames: NDArray[np.uint8]) -> NDArray[np.float32]:
        return thumbnail(frames, self.size)
