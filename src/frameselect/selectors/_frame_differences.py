"""What the shot-boundary selectors share: frame differences per channel, in chunks, and their fit to ``k``.

Used by ``scenedetect_content``, ``scenedetect_adaptive`` and ``katna``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from frameselect._core.video.pixels import read_frames
from frameselect.selectors.base import fill_to_k

__all__ = ["CHUNK", "keep_top_k", "consecutive_abs_diff_sums", "planes"]

#: frames converted together: bounds memory on long pools, and keeps the dozen per-pixel
#: temporaries of a chunk near the cache (32 frames of 72 x 128 converted 1.3-2x faster than 256
#: on one core; conversions and sums are per pixel and per frame, so the chunk changes no value)
CHUNK = 32


def planes(rgb: NDArray[np.uint8]) -> tuple[NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8]]:
    """The channel planes of (..., C) frames, each contiguous."""
    p = np.ascontiguousarray(np.moveaxis(np.asarray(rgb), -1, 0))
    return p[0], p[1], p[2]


def keep_top_k(frames: list[int], strength: list[float], k: int, n: int) -> list[int]:
    """The fit rule of the shot-boundary detectors: more than ``k`` frames -> the ``k`` with the
    highest detection strength (earlier frame on ties); fewer -> ``fill_to_k``
    (frames farthest in time from those chosen).

    >>> keep_top_k([2, 5, 9], [1.0, 3.0, 2.0], 2, 10)
    [5, 9]
    >>> keep_top_k([5], [1.0], 3, 10)
    [0, 5, 9]
    """
    if len(frames) > k:
        order = sorted(range(len(frames)), key=lambda j: (-strength[j], frames[j]))[:k]
        frames = [frames[j] for j in order]
    return fill_to_k(frames, k, n)


_Planes = Callable[[NDArray[np.uint8]], tuple[NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8]]]


def consecutive_abs_diff_sums(planes_of: _Planes, pixels: NDArray[np.uint8]) -> NDArray[np.int64]:
    """(N - 1, C): per channel, sum over pixels of |frame i+1 - frame i| (channels from ``planes_of``)."""
    n = pixels.shape[0]
    out = np.zeros((max(n - 1, 0), 3), dtype=np.int64)
    for start in range(0, n - 1, CHUNK):
        block = read_frames(pixels, start, min(start + CHUNK + 1, n))  # a cached stack is read, not mapped
        for c, plane in enumerate(planes_of(block)):
            d = np.maximum(plane[1:], plane[:-1])
            d -= np.minimum(plane[1:], plane[:-1])  # |difference| in uint8, exactly (8x faster than through int16)
            out[start : start + block.shape[0] - 1, c] = d.reshape(d.shape[0], -1).sum(axis=1, dtype=np.int64)
    return out
