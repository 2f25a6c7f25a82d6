"""TSN sparse segment sampling: ``k`` equal segments, one frame from each.

Wang et al., "Temporal Segment Networks: Towards Good Practices for Deep
Action Recognition" (ECCV 2016). Reference code: ``TSNDataSet`` in
yjxiong/tsn-pytorch ``dataset.py`` (``_sample_indices``,
``_get_test_indices``) and mmaction2's ``SampleFrames``
(``mmaction/datasets/transforms/loading.py``, ``clip_len=1``,
``frame_interval=1``), which share the index arithmetic used here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frameselect.registry import selectors
from frameselect.selectors.base import Selector, fill_to_k
from frameselect.types import CandidatePool, Features, Query

__all__ = ["TSN", "tsn_test_indices", "tsn_train_indices"]


def tsn_test_indices(n: int, k: int) -> list[int]:
    """The centre of each of ``k`` equal segments of ``n`` frames (TSN's test sampling).

    ``tick = n / k``; segment ``j`` contributes ``int(tick / 2 + tick * j)``,
    in the reference's float64 arithmetic (TSN ``_get_test_indices`` with
    ``new_length=1``, minus its 1-based offset; mmaction2 ``SampleFrames``
    in test mode with ``clip_len=1``). For ``n < k`` centres repeat, as in
    the reference.

    >>> tsn_test_indices(10, 3)
    [1, 5, 8]
    >>> tsn_test_indices(2, 3)
    [0, 1, 1]
    """
    tick = n / float(k)
    return [int(tick / 2.0 + tick * j) for j in range(k)]


def tsn_train_indices(n: int, k: int, rng: np.random.Generator) -> list[int]:
    """One frame at a random offset in each of ``k`` segments of ``n // k`` frames (TSN's train sampling).

    ``average_duration = n // k``; segment ``j`` contributes
    ``j * average_duration + randint(average_duration)`` (TSN
    ``_sample_indices`` with ``new_length=1``; mmaction2 ``SampleFrames``
    in train mode with ``clip_len=1``, ``keep_tail_frames=False``), so the
    last ``n mod k`` frames are never drawn. For ``n < k`` the reference
    returns ``k`` zeros (TSN; mmaction2 rounds ``j * n / k`` instead); so
    does this function, following TSN.

    >>> tsn_train_indices(12, 3, np.random.default_rng(0))
    [3, 6, 10]
    """
    average = n // k
    if average > 0:
        return [int(j * average + o) for j, o in enumerate(rng.integers(average, size=k))]
    return [0] * k


@selectors.register("tsn")
@dataclass(frozen=True)
class TSN(Selector):
    """TSN sparse sampling: split the pool into ``k`` equal segments, take one frame from each.

    Wang et al., ECCV 2016; reference yjxiong/tsn-pytorch ``dataset.py``
    (``_get_test_indices``, ``_sample_indices``) and mmaction2
    ``SampleFrames`` (test / train mode, ``clip_len=1``,
    ``frame_interval=1``), whose index arithmetic this follows exactly:

    - ``mode="test"`` (default, deterministic): the centre of each segment,
      ``int(n / k / 2 + n / k * j)`` (:func:`tsn_test_indices`);
    - ``mode="train"``: segments of ``n // k`` frames, a uniform random
      offset in each from the run's rng (:func:`tsn_train_indices`); the
      last ``n mod k`` frames are never drawn, as in the reference.

    Indices are pool positions (the reference's 1-based frame numbers of
    ``tsn-pytorch`` minus one). The selector is given ``k = min(k, N)``,
    so segments always hold at least one frame and both modes return ``k``
    distinct frames (``k = N`` gives every frame). For a budget above the
    pool size the reference would repeat frames (test: repeated centres;
    train: ``k`` zeros in TSN, rounded ``j * n / k`` in mmaction2); here
    the budget is capped at ``N`` instead, and any repeat would be replaced
    by the shared fill rule (:func:`~frameselect.selectors.base.fill_to_k`).

    Deviations: train-mode offsets come from the run's ``numpy.random.Generator``
    (``rng.integers``), not the global ``numpy.random.randint`` stream, so
    the same seed does not reproduce the reference's draws (the
    distribution is the same). mmaction2's ``twice_sample``,
    ``keep_tail_frames`` and multi-frame clips (``clip_len > 1``) are not
    offered.
    """

    mode: str = "test"

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        n = len(pool)
        if self.mode == "test":
            chosen = tsn_test_indices(n, k)
        elif self.mode == "train":
            chosen = tsn_train_indices(n, k, rng)
        else:
            raise ValueError(f"unknown TSN mode {self.mode!r}; use 'test' or 'train'")
        return fill_to_k(chosen, k, n)
