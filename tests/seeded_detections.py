"""Seeded per-frame object confidences: the inputs the T* and VSLS reference runs were made on."""

from __future__ import annotations

import numpy as np


def detections(seed: int, n: int, n_targets: int, n_cues: int) -> np.ndarray:
    """(n, n_targets + n_cues) confidences: each object seen in 1–3 runs of frames; targets surer than cues."""
    rng = np.random.default_rng(seed)
    conf = np.zeros((n, n_targets + n_cues))
    for o in range(n_targets + n_cues):
        for _ in range(rng.integers(1, 4)):
            start = int(rng.integers(0, n))
            length = int(rng.integers(2, max(3, n // 8)))
            lo, hi = (0.3, 0.95) if o < n_targets else (0.05, 0.6)
            conf[start : start + length, o] = rng.uniform(lo, hi, size=len(conf[start : start + length, o]))
    return conf
