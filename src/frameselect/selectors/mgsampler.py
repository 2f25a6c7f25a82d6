"""MGSampler: motion-guided frame sampling (Zhi et al., ICCV 2021).

Also home of the pixel helpers shared by the pixel-based selectors:
:func:`rgb_to_gray` (OpenCV's ``COLOR_RGB2GRAY``, bit-exact) and
:func:`ssim` / :func:`consecutive_ssim` (structural similarity in numpy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from frameselect._core.video.pixels import read_frames
from frameselect.registry import selectors
from frameselect.selectors.base import Selector, fill_to_k
from frameselect.types import CandidatePool, Features, Query

__all__ = ["MGSampler", "rgb_to_gray", "ssim", "consecutive_ssim", "motion_guided_indices"]

#: frames processed together when a selector streams over the pixels: bounds memory, and keeps a
#: chunk's temporaries near the cache (64 frames of 72 x 128 ran SSIM, gray and dHash 1.2-2x
#: faster than 256 on one core; every result is per frame or exact, so the chunk changes no value)
CHUNK = 64

# OpenCV's fixed-point BT.601 luma weights for 8-bit RGB2GRAY (OpenCV 4+: RY15, GY15, BY15, gray_shift = 15)
_R2Y, _G2Y, _B2Y, _GRAY_SHIFT = 9798, 19235, 3735, 15


def rgb_to_gray(rgb: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """RGB (..., 3) uint8 to gray (...) uint8, bit-exact with ``cv2.COLOR_RGB2GRAY``.

    ``Y = (9798 R + 19235 G + 3735 B + 2^14) >> 15``, OpenCV's (4.x and later)
    fixed-point form of ``0.299 R + 0.587 G + 0.114 B``.

    >>> rgb_to_gray(np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]], np.uint8)).tolist()
    [76, 150, 29, 255]
    """
    x = np.asarray(rgb)
    # every partial sum is an integer below 2**24, so float32 (and its BLAS product) is exact
    y = x.reshape(-1, 3).astype(np.float32) @ np.array([_R2Y, _G2Y, _B2Y], dtype=np.float32)
    y += np.float32(1 << (_GRAY_SHIFT - 1))
    return (y.astype(np.int32) >> _GRAY_SHIFT).astype(np.uint8).reshape(x.shape[:-1])


# --------------------------------------------------------------------------- SSIM

_K1, _K2, _DATA_RANGE = 0.01, 0.03, 255.0
_C1, _C2 = (_K1 * _DATA_RANGE) ** 2, (_K2 * _DATA_RANGE) ** 2
_UNIFORM_WIN = 7
_GAUSS_SIGMA, _GAUSS_TRUNCATE = 1.5, 3.5


def _box_valid(x: NDArray[np.float32], win: int) -> NDArray[np.float32]:
    """Sum over every full ``win`` x ``win`` window of the last two axes of (M, h, w).

    ``win - 1`` shifted additions along each axis; exact for integer-valued
    inputs whose window sums stay below 2**24 (gray values and their
    products: at most 49 * 255**2), so the order of the additions does not
    matter. (Two matrix products with 0/1 band matrices give the same sums
    but spend 128 multiply-adds per output where 7 suffice: 2x slower.)
    """
    m, h, w = x.shape
    cols = w - win + 1
    rows = x[:, :, 0:cols].copy()
    for d in range(1, win):
        rows += x[:, :, d : d + cols]
    out: NDArray[np.float32] = rows[:, 0 : h - win + 1].copy()
    for d in range(1, win):
        out += rows[:, d : d + h - win + 1]
    return out


def _gauss_kernel() -> NDArray[np.float64]:
    radius = int(_GAUSS_TRUNCATE * _GAUSS_SIGMA + 0.5)
    t = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-0.5 * (t / _GAUSS_SIGMA) ** 2)
    out: NDArray[np.float64] = w / float(w.sum())
    return out


def _gauss_valid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Gaussian-weighted mean over every full window of the last two axes."""
    from scipy.ndimage import correlate1d

    w = _gauss_kernel()
    r = (len(w) - 1) // 2
    y = correlate1d(x, w, axis=-1, mode="reflect")[..., r:-r]
    out: NDArray[np.float64] = correlate1d(y, w, axis=-2, mode="reflect")[..., r:-r, :]
    return out


def _ssim_from_moments(
    mx: NDArray[np.float64], my: NDArray[np.float64], exx: NDArray[np.float64], eyy: NDArray[np.float64], exy: NDArray[np.float64], cov_norm: float
) -> NDArray[np.float64]:
    vx = cov_norm * (exx - mx * mx)
    vy = cov_norm * (eyy - my * my)
    vxy = cov_norm * (exy - mx * my)
    num = (2.0 * mx * my + _C1) * (2.0 * vxy + _C2)
    den = (mx * mx + my * my + _C1) * (vx + vy + _C2)
    out: NDArray[np.float64] = (num / den).reshape(num.shape[0], -1).mean(axis=1)
    return out


def _check_window(window: str, shape: tuple[int, ...]) -> None:
    if window not in ("uniform", "gaussian"):
        raise ValueError(f"unknown SSIM window {window!r}; use 'uniform' (7x7, skimage compare_ssim default) or 'gaussian' (11x11, sigma 1.5)")
    need = _UNIFORM_WIN if window == "uniform" else 2 * int(_GAUSS_TRUNCATE * _GAUSS_SIGMA + 0.5) + 1
    if shape[-1] < need or shape[-2] < need:
        raise ValueError(f"SSIM with the {window} window needs images of at least {need}x{need} pixels, got {shape[-2]}x{shape[-1]}")


def consecutive_ssim(gray: NDArray[np.uint8], window: str = "uniform") -> NDArray[np.float64]:
    """Mean SSIM between each frame and the next: (N, h, w) uint8 -> (N - 1,).

    ``window="uniform"`` is scikit-image's ``compare_ssim`` with its defaults,
    the call MGSampler's reference makes: 7x7 uniform window, sample
    covariance (N / (N - 1)), K1 = 0.01, K2 = 0.03, data range 255, mean
    over the pixels whose window lies inside the image. ``"gaussian"`` is
    Wang et al. (2004): 11x11 Gaussian window, sigma 1.5, population
    covariance, same constants and cropping (``structural_similarity(...,
    gaussian_weights=True, sigma=1.5, use_sample_covariance=False)``).
    """
    g = np.asarray(gray)
    if g.ndim != 3:
        raise ValueError(f"consecutive_ssim takes (N, h, w) gray frames, got shape {g.shape}")
    _check_window(window, g.shape)
    n = g.shape[0]
    out = np.empty(max(n - 1, 0), dtype=np.float64)
    for start in range(0, n - 1, CHUNK):
        block = g[start : min(start + CHUNK + 1, n)]
        out[start : start + block.shape[0] - 1] = _ssim_pairs(block, window)
    return out


def _ssim_pairs(block: NDArray[np.uint8], window: str) -> NDArray[np.float64]:
    if window == "gaussian":
        xf = block.astype(np.float64)
        mu, sq, cross = _gauss_valid(xf), _gauss_valid(xf * xf), _gauss_valid(xf[:-1] * xf[1:])
        return _ssim_from_moments(mu[:-1], mu[1:], sq[:-1], sq[1:], cross, 1.0)
    return _ssim_uniform(block)


def _ssim_uniform(block: NDArray[np.uint8]) -> NDArray[np.float64]:
    """Uniform-window SSIM of consecutive frames from exact integer window sums.

    With window sums ``s = sum x``, ``t = sum y`` over ``a = 49`` pixels, every
    difference that could cancel (``a * sum x^2 - s^2``, ...) is taken in
    int32, exactly; only the final ratio is floating point.
    """
    area = _UNIFORM_WIN * _UNIFORM_WIN
    x = block.astype(np.float32)
    sx = _box_valid(x, _UNIFORM_WIN).astype(np.int32)
    sxx = _box_valid(x * x, _UNIFORM_WIN).astype(np.int32)
    sxy = _box_valid(x[:-1] * x[1:], _UNIFORM_WIN).astype(np.int32)
    s, t = sx[:-1], sx[1:]
    st2 = 2 * s * t  # a^2 * 2 mu_x mu_y
    ss_tt = s * s + t * t  # a^2 * (mu_x^2 + mu_y^2)
    var_sum = area * (sxx[:-1] + sxx[1:]) - ss_tt  # a^2 * (var_x + var_y), population
    cov2 = 2 * area * sxy - st2  # a^2 * 2 cov_xy, population
    cov_norm = np.float32(area / (area - 1.0))  # sample covariance, as compare_ssim
    c1, c2 = np.float32(_C1 * area * area), np.float32(_C2 * area * area)
    num = (st2.astype(np.float32) + c1) * (cov_norm * cov2.astype(np.float32) + c2)
    den = (ss_tt.astype(np.float32) + c1) * (cov_norm * var_sum.astype(np.float32) + c2)
    ratio = num / den
    out: NDArray[np.float64] = ratio.reshape(ratio.shape[0], -1).mean(axis=1, dtype=np.float64)
    return out


def ssim(a: NDArray[np.uint8], b: NDArray[np.uint8], window: str = "uniform") -> float:
    """Mean SSIM of two gray uint8 images of equal shape (see :func:`consecutive_ssim`).

    >>> img = np.arange(64 * 64, dtype=np.uint8).reshape(64, 64)
    >>> ssim(img, img)
    1.0
    """
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"ssim takes two gray images of equal shape, got {x.shape} and {y.shape}")
    return float(consecutive_ssim(np.stack([x, y]), window)[0])


# --------------------------------------------------------------------------- MGSampler


def motion_guided_indices(motion: NDArray[np.float64], k: int, targets: NDArray[np.float64] | None = None) -> list[int]:
    """MGSampler's pick from per-pair motion ``motion[i]`` (frames i -> i + 1).

    The reference (``SampleFrames.__call__``): ``d = motion ** 0.5``, normalised
    to sum 1, accumulated into ``C``; for each target ``t_j`` (test mode:
    ``(j + 0.5) / k``) the pick is ``argmin |C - t_j|`` (first on ties). The
    reference returns ``argmin + 1`` as a 1-based frame-file number; as a
    0-based frame that is ``argmin``, the first frame of the pair. May hold
    repeats. A motion-free sequence (all zeros) is read as uniform motion.

    >>> motion_guided_indices(np.array([0.0] * 4 + [1.0] * 8), 4)  # still, then moving
    [4, 6, 8, 10]
    """
    d = np.sqrt(np.clip(np.asarray(motion, dtype=np.float64), 0.0, None))
    total = float(d.sum())
    if d.size == 0:
        return [0] * k
    if total <= 0.0:
        d = np.ones_like(d)
        total = float(d.size)
    cumulative = np.cumsum(d / total)
    t = (np.arange(k) + 0.5) / k if targets is None else np.asarray(targets, dtype=np.float64)
    return [int(np.argmin(np.abs(cumulative - tj))) for tj in t]


@selectors.register("mgsampler")
@dataclass(frozen=True)
class MGSampler(Selector):
    """Motion-guided sampling (MGSampler).

    Zhi, Tong, Wang, Wu, "MGSampler: An Explainable Sampling Strategy for
    Video Action Recognition", ICCV 2021; reference code MCG-NJU/MGSampler
    (``generate_img_diff.py`` for the motion, ``SampleFrames`` in
    ``mmaction/datasets/pipelines/loading.py`` for the pick).

    Motion between consecutive frames is ``1 - SSIM`` of their gray images
    (OpenCV ``RGB2GRAY``); the cumulative distribution of ``sqrt(motion)``
    (normalised to 1) is cut at ``k`` uniform quantiles, and each quantile
    takes the frame whose cumulative motion is nearest (see
    :func:`motion_guided_indices`). Frames follow the motion: where nothing
    moves, few frames are taken.

    Defaults: ``mode="test"`` (quantiles at ``(j + 0.5) / k``, the reference's
    test-time rule; ``"train"`` draws one uniform point per bin from the
    run's rng, its training rule); ``ssim_window="uniform"`` (7x7 uniform
    window, sample covariance, K1 = 0.01, K2 = 0.03, data range 255: the
    ``skimage.measure.compare_ssim`` defaults the reference calls);
    ``"gaussian"`` gives Wang et al.'s 11x11, sigma = 1.5 Gaussian SSIM.

    Deviations: the reference hard-codes 16 quantiles (any ``k`` here) and
    works on every decoded video frame; here the pool's frames at width 128
    (``features.pixels``). A budget ``k`` must return distinct frames, so
    repeated picks (motion piled on a few frames) are replaced by the
    shared fill rule with priority = motion to the next frame
    (``fill_to_k``). A pool without any motion is sampled as if motion
    were uniform (the reference would divide by zero).

    Cost: 0.6-1 s for 3600 frames of 72x128 on one core, far above the
    50 ms target: SSIM needs three windowed sums (exact integer sums by
    shifted additions, 12 passes each) and a dozen per-pixel operations
    over all 33 M pixels; the pick itself is negligible. One plain copy of
    the 100 MB pixel stack takes 10-13 ms on one core, so the passes SSIM
    makes cannot fit in 50 ms (``benchmarks/selector_floors.py``).
    """

    needs = frozenset({"pixels"})
    mode: str = "test"
    ssim_window: str = "uniform"

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        if self.mode not in ("test", "train"):
            raise ValueError(f"unknown MGSampler mode {self.mode!r}; use 'test' or 'train'")
        n = len(pool)
        if k >= n:
            return list(range(n))
        gray = _gray_stack(np.asarray(features.pixels))
        motion = 1.0 - consecutive_ssim(gray, self.ssim_window)
        targets = None
        if self.mode == "train":
            targets = (np.arange(k) + rng.uniform(0.0, 1.0, size=k)) / k
        picks = motion_guided_indices(motion, k, targets)
        priority = np.append(np.clip(motion, 0.0, None), 0.0)
        return fill_to_k(picks, k, n, priority=priority)


def _gray_stack(pixels: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """Gray frames of a (N, h, w, 3) stack, converted chunk by chunk."""
    n = pixels.shape[0]
    out = np.empty(pixels.shape[:3], dtype=np.uint8)
    for start in range(0, n, CHUNK):
        out[start : start + CHUNK] = rgb_to_gray(read_frames(pixels, start, start + CHUNK))  # a cached stack is read, not mapped
    return out
