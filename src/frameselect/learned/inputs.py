"""Per-frame inputs of the learned selector, from what the pipeline already has (numpy only).

Every input is independent of the encoder's embedding size, so one policy
serves any encoder whose relevance it was trained on. For a pool of ``N``
frames at times ``t`` in a video of duration ``T``, with query relevance
``r`` (``Features.relevance()``), L2-normalised frame embeddings ``e`` (when
given) and budget ``k``, row ``i`` holds (in this order, :data:`INPUT_NAMES`):

``rel_z``
    ``(r_i - mean r) / std r`` within the pool (0 when ``r`` is constant).
``rel_minmax``
    ``r`` min-max normalised to [0, 1].
``rel_rank``
    rank percentile of ``r_i`` (1 = the most relevant frame).
``rel_peak``
    1 when ``r_i`` is above the pool's mean and the largest within ±2
    frames, else 0: the top of a relevant moment rather than its neighbour.
``rel_neighbours``
    mean ``rel_z`` of frames ``i - 1`` and ``i + 1``.
``rel_contrast``
    ``rel_z`` minus the mean ``rel_z`` over ±5 frames.
``time``
    relative time ``t_i / T``.
``grid``
    closeness to the nearest centre of ``k`` equal time bins, 1 at a centre,
    0 at a bin edge: uniform sampling is the top-k of this input alone.
``novelty_prev`` / ``novelty_next``
    ``1 - e_i · e_{i-1}`` and ``1 - e_i · e_{i+1}`` (0 at the ends or without embeddings).
``typicality``
    ``e_i · mean e`` (0 without embeddings).
``query_spread``
    standard deviation of raw ``r`` over the pool, the same on every row:
    how much the query singles out some frames (small for questions about
    the whole video).
``query_peak``
    ``max rel_z / 5``, the same on every row.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["INPUT_NAMES", "frame_inputs"]

INPUT_NAMES = (
    "rel_z",
    "rel_minmax",
    "rel_rank",
    "rel_peak",
    "rel_neighbours",
    "rel_contrast",
    "time",
    "grid",
    "novelty_prev",
    "novelty_next",
    "typicality",
    "query_spread",
    "query_peak",
)


def _window_mean(x: NDArray[np.float64], half: int) -> NDArray[np.float64]:
    """Mean over ``[i - half, i + half]`` clipped to the array."""
    c = np.concatenate([[0.0], np.cumsum(x)])
    n = len(x)
    lo = np.clip(np.arange(n) - half, 0, n)
    hi = np.clip(np.arange(n) + half + 1, 0, n)
    out: NDArray[np.float64] = (c[hi] - c[lo]) / (hi - lo)
    return out


def frame_inputs(
    times: NDArray[np.float64], duration: float | None, relevance: NDArray[np.float64], embeddings: NDArray[np.float32] | None, k: int
) -> NDArray[np.float32]:
    """The ``(N, len(INPUT_NAMES))`` input matrix of one pool (see the module docstring).

    >>> x = frame_inputs(np.array([0.5, 1.5, 2.5, 3.5]), 4.0, np.array([0.0, 1.0, 0.0, 0.0]), None, 2)
    >>> x[:, INPUT_NAMES.index("rel_peak")].tolist(), x[:, INPUT_NAMES.index("grid")].tolist()
    ([0.0, 1.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5])
    """
    t = np.asarray(times, dtype=np.float64)
    r = np.asarray(relevance, dtype=np.float64)
    n = len(t)
    if r.shape != (n,):
        raise ValueError(f"relevance of shape {r.shape} for a pool of {n} frames")
    span = float(duration) if duration is not None and duration > 0 else (float(t[-1]) + 1e-9 if n and t[-1] > 0 else 1.0)
    std = float(r.std())
    z = (r - r.mean()) / std if std > 1e-12 else np.zeros(n)
    lo, hi = float(r.min()), float(r.max())
    minmax = (r - lo) / (hi - lo) if hi - lo > 1e-12 else np.zeros(n)
    order = np.argsort(np.argsort(r, kind="stable"), kind="stable")
    rank = order / max(n - 1, 1)
    padded = np.concatenate([np.full(2, -np.inf), r, np.full(2, -np.inf)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, 5)
    peak = (r >= windows.max(axis=1)) & (z > 0)
    zp = np.concatenate([[0.0], z, [0.0]])
    count = np.full(n, 2.0)
    if n:
        count[0] -= 1
        count[-1] -= 1
    neighbours = (zp[:-2] + zp[2:]) / np.maximum(count, 1.0)
    contrast = z - _window_mean(z, 5)
    rel_t = np.clip(t / span, 0.0, 1.0)
    position = rel_t * k
    grid = 1.0 - 2.0 * np.abs(position - np.floor(np.minimum(position, k - 1e-9)) - 0.5)
    novelty_prev = np.zeros(n)
    novelty_next = np.zeros(n)
    typicality = np.zeros(n)
    if embeddings is not None and n:
        e = np.asarray(embeddings, dtype=np.float64)
        sims = np.sum(e[1:] * e[:-1], axis=1)
        novelty_prev[1:] = 1.0 - sims
        novelty_next[:-1] = 1.0 - sims
        typicality = e @ e.mean(axis=0)
    spread = np.full(n, std)
    peak_z = np.full(n, float(z.max()) / 5.0 if n else 0.0)
    cols = [z, minmax, rank, peak.astype(np.float64), neighbours, contrast, rel_t, grid, novelty_prev, novelty_next, typicality, spread, peak_z]
    return np.stack(cols, axis=1).astype(np.float32)
