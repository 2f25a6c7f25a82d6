"""Katna's key-frame extractor (``katna``): peaks of the smoothed L*u*v* frame difference.

It works on the pool's downscaled pixels (``features.pixels``) and converts
colours in numpy with OpenCV's formula and 8-bit ranges, as the reference
calls ``cv2.cvtColor``: :func:`rgb_to_luv` follows ``cv2.COLOR_RGB2Luv``'s
float formula (see there for how close it is).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors._frame_differences import consecutive_abs_diff_sums, keep_top_k, planes
from frameselect.selectors.base import Selector
from frameselect.types import CandidatePool, Features, Query

__all__ = ["KatnaDetector", "rgb_to_luv", "luv_frame_differences", "katna_smooth", "local_maxima"]

# sRGB -> XYZ (D65) as OpenCV's sRGB2XYZ_D65, and the white point's u', v'
_RGB2XYZ = np.array([[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169], [0.019334, 0.119193, 0.950227]])
_WHITE = _RGB2XYZ.sum(axis=1)
_UN = float(4.0 * _WHITE[0] / (_WHITE[0] + 15.0 * _WHITE[1] + 3.0 * _WHITE[2]))
_VN = float(9.0 * _WHITE[1] / (_WHITE[0] + 15.0 * _WHITE[1] + 3.0 * _WHITE[2]))


@functools.cache
def _xyz_tables() -> NDArray[np.float32]:
    """(3, 3, 256): contribution of channel c's 8-bit value to X, Y, Z after sRGB gamma."""
    c = np.arange(256, dtype=np.float64) / 255.0
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return (_RGB2XYZ[:, :, None] * linear[None, None, :]).astype(np.float32)


def _luv_planes(rgb: NDArray[np.uint8]) -> tuple[NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8]]:
    table = _xyz_tables()
    r, g, b = (np.asarray(c, dtype=np.intp) for c in planes(rgb))
    big_x, big_y, big_z = (np.take(table[j, 0], r) + np.take(table[j, 1], g) + np.take(table[j, 2], b) for j in range(3))
    light = np.cbrt(big_y)
    light *= np.float32(116.0)
    light -= np.float32(16.0)
    dark = big_y <= np.float32(0.008856)
    if dark.any():
        light[dark] = np.float32(903.3) * big_y[dark]
    denom = big_x + np.float32(15.0) * big_y + np.float32(3.0) * big_z
    np.maximum(denom, np.float32(1e-30), out=denom)
    inv = np.float32(1.0) / denom
    u = big_x * inv
    u *= np.float32(4.0)
    u -= np.float32(_UN)
    u *= light
    u *= np.float32(13.0)
    v = big_y * inv
    v *= np.float32(9.0)
    v -= np.float32(_VN)
    v *= light
    v *= np.float32(13.0)
    light_8 = np.floor(light * np.float32(255.0 / 100.0))
    u_8 = np.rint((u + np.float32(134.0)) * np.float32(255.0 / 354.0))
    v_8 = np.rint((v + np.float32(140.0)) * np.float32(255.0 / 262.0))
    l8, u8, v8 = (np.clip(a, 0, 255).astype(np.uint8) for a in (light_8, u_8, v_8))
    return l8, u8, v8


def rgb_to_luv(rgb: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """RGB (..., 3) uint8 to CIE L*u*v* (..., 3) uint8 in OpenCV's 8-bit ranges.

    OpenCV's documented ``COLOR_RGB2Luv`` formula: sRGB gamma, D65 ``XYZ``
    (OpenCV's matrix), ``L = 116 Y^(1/3) - 16`` (``903.3 Y`` for
    ``Y <= 0.008856``), ``u = 13 L (u' - u_n)``, ``v = 13 L (v' - v_n)``,
    stored as ``L * 255 / 100`` (truncated), ``(u + 134) * 255 / 354`` and
    ``(v + 140) * 255 / 262`` (rounded). OpenCV 4+ computes 8-bit Luv
    through a bit-exact lookup table with trilinear interpolation; over all
    2^24 colours this formula is never more than one level from it (equal on
    about 93 %, 89 % and 94 % of colours for L, u, v). Computed in float32.

    >>> rgb_to_luv(np.array([[255, 255, 255], [255, 0, 0], [0, 0, 0]], np.uint8)).tolist()
    [[255, 97, 136], [135, 223, 173], [0, 97, 136]]
    """
    return np.stack(_luv_planes(rgb), axis=-1)


def luv_frame_differences(pixels: NDArray[np.uint8]) -> NDArray[np.int64]:
    """Katna's frame difference: ``sum |LUV(i+1) - LUV(i)|`` over pixels and channels, (N - 1,)."""
    x = np.asarray(pixels)
    if x.shape[0] < 2:
        return np.zeros(0, dtype=np.int64)
    out: NDArray[np.int64] = consecutive_abs_diff_sums(_luv_planes, x).sum(axis=1)
    return out


def katna_smooth(x: NDArray[np.float64], window_len: int = 20, window: str = "hanning") -> NDArray[np.float64]:
    """Katna's ``FrameExtractor.__smooth__`` (the SciPy-cookbook smoother).

    Pads with point reflections ``2 x[0] - x[w:1:-1]`` and
    ``2 x[-1] - x[-1:-w:-1]``, convolves with the normalised window
    (``mode="same"``) and cuts ``[w - 1 : -w + 1]``. Shorter inputs than the
    window come back unchanged.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError("katna_smooth takes a 1-D signal")
    if x.size < window_len:
        return x
    if window not in ("flat", "hanning", "hamming", "bartlett", "blackman"):
        raise ValueError(f"unknown smoothing window {window!r}; use flat, hanning, hamming, bartlett or blackman")
    padded = np.r_[2 * x[0] - x[window_len:1:-1], x, 2 * x[-1] - x[-1:-window_len:-1]]
    w = np.ones(window_len) if window == "flat" else getattr(np, window)(window_len)
    y = np.convolve(w / w.sum(), padded, mode="same")
    out: NDArray[np.float64] = y[window_len - 1 : -window_len + 1]
    return out


def local_maxima(x: NDArray[np.float64]) -> list[int]:
    """Strict interior local maxima (``scipy.signal.argrelextrema(x, np.greater)``).

    >>> local_maxima(np.array([0.0, 2.0, 1.0, 1.0, 3.0, 3.0, 1.0]))
    [1]
    """
    x = np.asarray(x)
    if x.size < 3:
        return []
    inner = (x[1:-1] > x[:-2]) & (x[1:-1] > x[2:])
    return [int(i) + 1 for i in np.nonzero(inner)[0]]


@selectors.register("katna")
@dataclass(frozen=True)
class KatnaDetector(Selector):
    """Katna's key-frame candidates: peaks of the smoothed LUV frame difference.

    keplerlab/katna, ``Katna/frame_extractor.py`` (``FrameExtractor``) with
    the defaults of ``Katna/config.py``: ``len_window=20``,
    ``window_type="hanning"``, ``USE_LOCAL_MAXIMA=True``.

    For each pair of consecutive frames the sum of absolute differences of
    their 8-bit LUV images (:func:`rgb_to_luv`, OpenCV ranges); the series is
    smoothed (:func:`katna_smooth`) and every strict local maximum at pair
    index ``i`` (frames ``i``, ``i + 1``) yields frame ``i``, as the reference's
    ``frames[frame_index - 1]`` does.

    Fit to ``k`` (ours): more peaks than ``k`` -> the ``k`` highest smoothed
    peaks; fewer -> the shared fill rule, frames farthest in time from those
    chosen (``fill_to_k``).

    Deviations: Katna reduces its candidates to the requested number with
    its ``ImageSelector`` (brightness/entropy filter, k-means on colour
    histograms, sharpest frame per cluster); here the peak height decides.
    Katna streams a video in chunks of 2500 frames and restarts the
    difference at each chunk; here the whole pool is one series. It runs on
    every decoded frame at full size; here on the pool's frames at width 128.

    Cost: 0.6-0.9 s for 3600 frames of 72x128 on one core, far above the
    50 ms target: the float32 L*u*v* conversion of all 33 M pixels
    dominates (nine table look-ups and about 25 float32 passes per pixel). OpenCV's own ``cvtColor(COLOR_RGB2Luv)`` takes about 0.33 s
    for them on one core (``benchmarks/selector_floors.py``), and is not
    this formula (up to one level apart).
    """

    param_ranges = {"window_len": Range(ge=1, integer=True)}

    needs = frozenset({"pixels"})
    window_len: int = 20
    window: str = "hanning"

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        n = len(pool)
        if self.window_len < 1:
            raise ValueError(f"katna needs window_len >= 1, got {self.window_len}")
        diffs = luv_frame_differences(np.asarray(features.pixels)).astype(np.float64)
        smooth = katna_smooth(diffs, self.window_len, self.window)
        peaks = local_maxima(smooth)
        return keep_top_k(peaks, [float(smooth[p]) for p in peaks], k, n)
