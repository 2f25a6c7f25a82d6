"""Shot-boundary selectors: PySceneDetect's ContentDetector and Katna's frame extractor.

Both work on the pool's downscaled pixels (``features.pixels``) and convert
colours in numpy with OpenCV's formulas and 8-bit value ranges, because both
references call ``cv2.cvtColor``: :func:`rgb_to_hsv` (bit-exact with
``cv2.COLOR_RGB2HSV``) and :func:`rgb_to_luv` (``cv2.COLOR_RGB2Luv``'s
float formula; see there for how close it is).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Selector, fill_to_k
from frameselect.types import CandidatePool, Features, Query
from frameselect.video.pixels import read_frames

__all__ = [
    "ContentDetector",
    "KatnaDetector",
    "rgb_to_hsv",
    "rgb_to_luv",
    "content_scores",
    "flash_filter_merge",
    "scene_middles",
    "luv_frame_differences",
    "katna_smooth",
    "local_maxima",
    "keep_top_k",
]

#: frames converted together: bounds memory on long pools, and keeps the dozen per-pixel
#: temporaries of a chunk near the cache (32 frames of 72 x 128 converted 1.3-2x faster than 256
#: on one core; conversions and sums are per pixel and per frame, so the chunk changes no value)
CHUNK = 32

# --------------------------------------------------------------------------- colour conversions

_HSV_SHIFT = 12


@functools.cache
def _hsv_tables() -> tuple[NDArray[np.uint8], NDArray[np.uint8]]:
    """OpenCV's RGB2HSV_b arithmetic, tabulated.

    OpenCV: ``sdiv[v] = round(255 * 2^12 / v)``, ``hdiv[d] = round(180 * 2^12 / (6 d))``,
    ``s = (diff * sdiv[v] + 2^11) >> 12``, ``h = (num * hdiv[diff] + 2^11) >> 12``
    (+180 if negative). Tabulated here as ``S[v, diff]`` and ``H[num + 255, diff]``
    (``num`` in [-255, 1275]) so the per-pixel work is two look-ups.
    """
    i = np.arange(256, dtype=np.int64)
    sdiv = np.zeros(256, dtype=np.int64)
    hdiv = np.zeros(256, dtype=np.int64)
    sdiv[1:] = np.rint((255 << _HSV_SHIFT) / i[1:].astype(np.float64)).astype(np.int64)
    hdiv[1:] = np.rint((180 << _HSV_SHIFT) / (6.0 * i[1:].astype(np.float64))).astype(np.int64)
    half = 1 << (_HSV_SHIFT - 1)
    s_table = (i[None, :] * sdiv[:, None] + half) >> _HSV_SHIFT
    num = np.arange(-255, 1276, dtype=np.int64)
    h_table = (num[:, None] * hdiv[None, :] + half) >> _HSV_SHIFT
    h_table = np.where(h_table < 0, h_table + 180, h_table)
    return s_table.astype(np.uint8).ravel(), h_table.astype(np.uint8).ravel()


def _planes(rgb: NDArray[np.uint8]) -> tuple[NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8]]:
    p = np.ascontiguousarray(np.moveaxis(np.asarray(rgb), -1, 0))
    return p[0], p[1], p[2]


def _hsv_planes(rgb: NDArray[np.uint8]) -> tuple[NDArray[np.uint8], NDArray[np.uint8], NDArray[np.uint8]]:
    s_table, h_table = _hsv_tables()
    r, g, b = _planes(rgb)
    v = np.maximum(np.maximum(r, g), b)
    diff = v - np.minimum(np.minimum(r, g), b)
    index = v.astype(np.int32)
    index <<= 8
    index |= diff
    s = np.take(s_table, index)
    r16, g16, b16, d16 = r.astype(np.int16), g.astype(np.int16), b.astype(np.int16), diff.astype(np.int16)
    num = r16 - g16 + 4 * d16  # max is b
    # switch by multiplying with the 0/1 masks (exact small integers; a masked copy is several times slower)
    num += (v == g) * (b16 - r16 + 2 * d16 - num)  # max is g (unless r)
    num += (v == r) * (g16 - b16 - num)  # max is r
    index = num.astype(np.int32)
    index += 255
    index <<= 8
    index |= diff
    return np.take(h_table, index), s, v


def rgb_to_hsv(rgb: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """RGB (..., 3) uint8 to HSV (..., 3) uint8, bit-exact with ``cv2.COLOR_RGB2HSV``.

    OpenCV's 8-bit ranges: H in [0, 180) (degrees / 2), S and V in [0, 255];
    the same fixed-point arithmetic as OpenCV's ``RGB2HSV_b`` (checked on all
    2^24 colours).

    >>> rgb_to_hsv(np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]], np.uint8)).tolist()
    [[0, 255, 255], [60, 255, 255], [120, 255, 255], [105, 170, 30]]
    """
    return np.stack(_hsv_planes(rgb), axis=-1)


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
    r, g, b = (np.asarray(c, dtype=np.intp) for c in _planes(rgb))
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


# --------------------------------------------------------------------------- shared fit-to-k


def keep_top_k(frames: list[int], strength: list[float], k: int, n: int) -> list[int]:
    """The fit rule of both detectors: more than ``k`` frames -> the ``k`` with the
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


def _consecutive_abs_diff_sums(planes_of: _Planes, pixels: NDArray[np.uint8]) -> NDArray[np.int64]:
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


# --------------------------------------------------------------------------- PySceneDetect ContentDetector


def content_scores(pixels: NDArray[np.uint8], weights: tuple[float, float, float] = (1.0, 1.0, 1.0), edge_weight: float = 0.0) -> NDArray[np.float64]:
    """ContentDetector's ``content_val`` per frame: (N, h, w, 3) RGB -> (N,).

    ``score[i] = sum_c w_c * mean |HSV_c(i) - HSV_c(i-1)| / sum |w|`` over hue,
    saturation and value (OpenCV 8-bit HSV, hue difference not wrapped, as
    in the reference); ``score[0] = 0`` (no previous frame).
    """
    x = np.asarray(pixels)
    n = x.shape[0]
    scores = np.zeros(n, dtype=np.float64)
    if n < 2:
        return scores
    per_pixel = _consecutive_abs_diff_sums(_hsv_planes, x) / float(x.shape[1] * x.shape[2])
    total = sum(abs(w) for w in weights) + abs(edge_weight)
    if total == 0:
        raise ValueError("ContentDetector weights are all zero")
    scores[1:] = per_pixel @ np.asarray(weights, dtype=np.float64) / total
    return scores


def flash_filter_merge(above: NDArray[np.bool_], positions: NDArray[np.float64], length: float) -> list[int]:
    """PySceneDetect's ``FlashFilter`` in ``MERGE`` mode: the cut frames it emits.

    ``positions`` are frame numbers (``min_scene_len`` in frames) or seconds
    (in seconds). A cut closer than ``length`` to the previous frame above
    the threshold starts a merge, which ends (emitting the last frame above
    the threshold) once ``length`` has passed below the threshold. Cuts
    before the first ``length`` are dropped, as in the reference.

    >>> flash_filter_merge(np.array([False, False, True, False, True, False]), np.arange(6.0), 2)
    [2, 4]
    """
    n = len(above)
    if length <= 0:
        return [i for i in range(n) if above[i]]
    cuts: list[int] = []
    last_above = 0
    merge_enabled = merge_triggered = False
    merge_start = 0
    for i in range(n):
        min_length_met = positions[i] - positions[last_above] >= length
        if above[i]:
            last_above = i
        if merge_triggered:
            if min_length_met and not above[i] and positions[last_above] - positions[merge_start] >= length:
                merge_triggered = False
                cuts.append(last_above)
            continue
        if not above[i]:
            continue
        if min_length_met:
            merge_enabled = True
            cuts.append(i)
            continue
        if merge_enabled:
            merge_triggered = True
            merge_start = i
    return cuts


def scene_middles(cuts: list[int], n: int) -> list[int]:
    """Middle frame of each scene ``[start, end)`` the cuts make: ``(start + end - 1) // 2``.

    >>> scene_middles([4, 10], 12)
    [1, 6, 10]
    """
    starts = [0] + list(cuts)
    ends = list(cuts) + [n]
    return [(s + e - 1) // 2 for s, e in zip(starts, ends, strict=True)]


@selectors.register("scenedetect_content")
@dataclass(frozen=True)
class ContentDetector(Selector):
    """PySceneDetect's ContentDetector, one frame per detected scene.

    Castellano, PySceneDetect (BSD-3); reference
    ``scenedetect/detectors/content_detector.py`` and the ``FlashFilter`` in
    ``scenedetect/detector.py`` (Breakthrough/PySceneDetect, v0.7).

    Each frame's score is the weighted mean absolute difference of its
    OpenCV-HSV channels to the previous frame (:func:`content_scores`); a
    frame scoring ``>= threshold`` is a cut, filtered by ``FlashFilter`` in
    MERGE mode with ``min_scene_len`` (:func:`flash_filter_merge`). Each
    scene contributes its middle frame (:func:`scene_middles`).

    Defaults are PySceneDetect's: ``threshold=27.0``, ``min_scene_len=15``,
    weights hue/sat/lum/edges = 1/1/1/0, ``luma_only=False``. An ``int``
    ``min_scene_len`` counts pool frames, a ``float`` counts seconds of pool
    timestamps (the reference counts video frames or seconds).

    Fit to ``k`` (ours; the reference returns every scene): more scenes than
    ``k`` -> the ``k`` scenes whose opening cut scored highest (the first
    scene, opened by the video start, ranks first); fewer -> the shared
    fill rule, frames farthest in time from those chosen (``fill_to_k``).

    Deviations: runs on the pool's frames at width 128, not on every
    decoded frame at full size, so scores and cuts depend on the pool's
    sampling rate (at 1 fps, ``min_scene_len=15`` means 15 s). The edge
    component (Canny + dilation) is not implemented: a non-zero edge weight
    is an error; with the default weight 0 the output is unaffected.

    Cost: 0.25-0.35 s for 3600 frames of 72x128 on one core, far above the
    50 ms target: the HSV conversion of all 33 M pixels dominates (about
    ten integer passes and two table look-ups per pixel). Even
    OpenCV's SIMD ``cvtColor(COLOR_RGB2HSV)`` (bit-exact with
    :func:`rgb_to_hsv`) takes about 47 ms for those pixels on one core,
    before any difference is taken (``benchmarks/selector_floors.py``).
    """

    param_ranges = {"threshold": Range(ge=0), "min_scene_len": Range(ge=0), "weights": Range()}

    needs = frozenset({"pixels"})
    threshold: float = 27.0
    min_scene_len: int | float = 15
    weights: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 0.0)
    luma_only: bool = False

    def cuts(self, pool: CandidatePool, pixels: NDArray[np.uint8]) -> tuple[list[int], NDArray[np.float64]]:
        """The cut frames and every frame's content score."""
        weights = (0.0, 0.0, 1.0, 0.0) if self.luma_only else tuple(float(w) for w in self.weights)
        if len(weights) != 4:
            raise ValueError(f"ContentDetector weights are (hue, sat, lum, edges), got {self.weights!r}")
        if weights[3] != 0.0:
            raise ValueError("ContentDetector's edge component (Canny) is not implemented; use an edge weight of 0")
        scores = content_scores(pixels, (weights[0], weights[1], weights[2]), weights[3])
        if isinstance(self.min_scene_len, bool) or not isinstance(self.min_scene_len, (int, float)):
            raise ValueError(f"min_scene_len must be an int (frames) or a float (seconds), got {self.min_scene_len!r}")
        if isinstance(self.min_scene_len, int):
            positions = np.arange(len(scores), dtype=np.float64)
        else:
            positions = np.asarray(pool.timestamps, dtype=np.float64)
        cuts = flash_filter_merge(scores >= self.threshold, positions, float(self.min_scene_len))
        return sorted({c for c in cuts if 0 < c < len(scores)}), scores

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        n = len(pool)
        cuts, scores = self.cuts(pool, np.asarray(features.pixels))
        middles = scene_middles(cuts, n)
        strength = [math.inf] + [float(scores[c]) for c in cuts]
        return keep_top_k(middles, strength, k, n)


# --------------------------------------------------------------------------- Katna


def luv_frame_differences(pixels: NDArray[np.uint8]) -> NDArray[np.int64]:
    """Katna's frame difference: ``sum |LUV(i+1) - LUV(i)|`` over pixels and channels, (N - 1,)."""
    x = np.asarray(pixels)
    if x.shape[0] < 2:
        return np.zeros(0, dtype=np.int64)
    out: NDArray[np.int64] = _consecutive_abs_diff_sums(_luv_planes, x).sum(axis=1)
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
