"""FlexSelect: frames ranked by the answering model's own cross-modal attention.

Zhang et al., *FlexSelect: Flexible Token Selection for Efficient Long Video
Understanding* (NeurIPS 2025), code at github.com/yunzhuzhang0918/flexselect
(commit a1d1f5aa6d388c44ae6ea4b618b785be617f71ad). In its training-free mode
the video and the question go through the answering model up to a reference
decoder layer (``token_selector_layer``; the Qwen2.5-VL-7B script uses 20 of 28,
the README's default is -1, the last); there, the attention of the text after
the video to each visual token (``eval/qwen2_5_vl/token_selector.py``,
``token_selection``: max over heads and text tokens; ``token_selection_mean``:
mean) scores the token, and the top tokens are kept. A long video is cut into
``ceil(n / max_frames_per_group)`` groups of strided frames (group ``g``: frames
``g, g + G, g + 2G, ...``; ``compress_vision_embeddings`` of
``eval/qwen2_5_vl/modeling_qwen2_5_vl.py``), each scored in its own pass and
given an equal share of the budget.

This selector keeps the scoring and the grouping, and selects frames rather
than tokens: a frame's score is its tokens' scores reduced by ``frame_reduce``
(``mean`` by default; Qwen's two frames of one temporal patch share a score,
ties going to the earlier frame), and each group's share of ``k`` goes to its
best frames (the shares differ by at most one, the larger ones to the first
groups). The frame-level reduction is this project's choice; the reference
selects tokens.

It ranks frames through the answerer (``needs_answerer =
{"answerer_attention"}``): the plan refuses a run whose answerer does not
declare that capability (the transformers Qwen2-VL and Qwen2.5-VL backends do).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Scored, Selector
from frameselect.types import CandidatePool, Features, Query, Selection

__all__ = ["FlexSelect", "group_frames", "group_shares"]

#: the answerer of the ``select_through`` call in progress (selectors are frozen values)
_ANSWERER: contextvars.ContextVar[Any] = contextvars.ContextVar("flexselect_answerer", default=None)


def group_frames(n: int, group: int) -> list[list[int]]:
    """The reference's strided groups: ``G = ceil(n / group)`` groups, group ``g`` holds ``g, g + G, ...``.

    >>> group_frames(5, 2)
    [[0, 3], [1, 4], [2]]
    """
    n_groups = -(-n // group)
    return [[g + i * n_groups for i in range(group) if g + i * n_groups < n] for g in range(n_groups)]


def group_shares(k: int, sizes: list[int]) -> list[int]:
    """``k`` shared over groups as equally as their sizes allow (the larger shares to the first groups).

    >>> group_shares(5, [2, 2, 1])
    [2, 2, 1]
    >>> group_shares(3, [4, 4])
    [2, 1]
    """
    shares = [0] * len(sizes)
    left = min(k, sum(sizes))
    while left > 0:
        for g, size in enumerate(sizes):
            if left and shares[g] < size:
                shares[g] += 1
                left -= 1
    return shares


@selectors.register("flexselect")
@dataclass(frozen=True)
class FlexSelect(Selector):
    """Frames ranked by the answering model's text-to-visual attention at decoder ``layer`` (FlexSelect; module docs)."""

    needs_answerer: ClassVar[frozenset[str]] = frozenset({"answerer_attention"})
    # layer: a decoder layer index as Python indexes it (-1: the last); no model has more than 512 layers
    param_ranges = {"group": Range(ge=1, integer=True), "layer": Range(ge=-512, le=511, integer=True)}

    layer: int = -1
    reduce: str = "max"
    frame_reduce: str = "mean"
    group: int = 64

    def __post_init__(self) -> None:
        if self.reduce not in ("max", "mean"):
            raise ValueError(f"reduce must be 'max' (the reference's token_selection) or 'mean' (token_selection_mean), got {self.reduce!r}")
        if self.frame_reduce not in ("max", "mean"):
            raise ValueError(f"frame_reduce must be 'mean' or 'max', got {self.frame_reduce!r}")

    def select_through(self, answerer: Any, pool: CandidatePool, query: Query | None, k: int, features: Features | None = None, *, seed: int = 0) -> Selection:
        """:meth:`select` with the answering backend whose attention ranks the frames."""
        token = _ANSWERER.set(answerer)
        try:
            return self.select(pool, query, k, features, seed=seed)
        finally:
            _ANSWERER.reset(token)

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        answerer = _ANSWERER.get()
        if answerer is None or not hasattr(answerer, "frame_attention"):
            raise SelectionError("flexselect ranks frames by the answering model's attention: run it with an answerer that gives it (answerer='qwen2_5_vl')")
        if query is None:
            raise SelectionError("flexselect ranks frames by the question's attention: it needs a query")
        if pool.source is None:
            raise SelectionError(f"pool of {pool.video_id!r} has no frames to show the answering model")
        from frameselect.answerers.transformers_vlm import build_prompt

        frames = [f for _, f in pool.source.iter(range(len(pool)))]
        times = [float(t) for t in pool.timestamps]
        groups = group_frames(len(pool), self.group)
        picked: list[int] = []
        scores: dict[int, float] = {}
        for members, share in zip(groups, group_shares(k, [len(g) for g in groups])):
            ts = [times[i] for i in members]
            prompt = build_prompt(query, ts, pool.duration, getattr(answerer, "time_instruction", True))
            s = answerer.frame_attention(prompt, [frames[i] for i in members], ts, layer=self.layer, reduce=self.reduce, frame_reduce=self.frame_reduce)
            order = sorted(range(len(members)), key=lambda j: (-float(s[j]), j))
            for j in order[:share]:
                picked.append(members[j])
                scores[members[j]] = float(s[j])
        idx = sorted(picked)
        return Scored(idx, [scores[i] for i in idx])
