"""DIG: query-type routing, then shot-level reward refinement for local questions.

Reference code: github.com/Jialuo-Li/DIG, ``pipeline/cafs.py``
(``get_r_frames``), ``pipeline/video_refinement.py`` (``video_refinement``,
``merge_intervals``, ``select_k_indices``, ``main``) and
``pipeline/query_identification.py`` with ``utils.py``'s
``QUERY_IDENTIFICATION_PROMPT``. See :class:`DIG`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors.base import Selector, fill_to_k
from frameselect.types import CandidatePool, Features, Query

__all__ = ["DIG", "dig_query_type", "dig_shots", "dig_refine", "dig_merge", "dig_linspace", "dig_select"]

# The offline stand-in for the reference's LLM classifier, written from the criteria of its prompt:
# global = no specific referent (summary, main focus, what the video is about, negations such as
# "not mentioned") or a referent that needs the whole video (overall role, throughout, counting
# over the video); everything else (entities, actions, temporal anchors) is local.
_GLOBAL_CUES = re.compile(
    r"\bprimary focus\b|\bmain (focus|topic|theme|idea|subject|purpose|point|message|content)\b|\bin summary\b|\bsummar"
    r"|\b(what|which) is the (video|clip|film|movie|lecture|lesson) (mainly |mostly |primarily )?about\b|\bthe video (is )?(mainly |mostly )?about\b"
    r"|\bnot (mentioned|shown|included|discussed|covered|present|appear)|\bnever (mentioned|shown|appear)|\bexcept\b"
    r"|\boverall\b|\bthroughout\b|\b(entire|whole) (video|clip|film|movie)\b|\bgeneral (theme|idea|topic)\b"
    r"|\bhow many times\b|\bhow often\b|\bin (what|which) order\b|\bsequence of events\b"
)


def dig_query_type(question: str) -> str:
    """``"global"`` or ``"local"`` for a question, by the documented offline rule (options are not read).

    >>> dig_query_type("What is the primary focus of the video?")
    'global'
    >>> dig_query_type("Which of these is not mentioned in the lecture?")
    'global'
    >>> dig_query_type("What does the man in the red shirt pick up after the explosion?")
    'local'
    """
    first = question.strip().split("\n", 1)[0].lower()  # the reference's question may carry its options on later lines
    return "global" if _GLOBAL_CUES.search(first) else "local"


def _cosine_distance(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    na = np.maximum(np.linalg.norm(a, axis=1), 1e-8)
    nb = np.maximum(np.linalg.norm(b, axis=1), 1e-8)
    return np.asarray(1.0 - np.sum(a * b, axis=1) / (na * nb), dtype=np.float64)


def dig_shots(feats: NDArray[np.floating], chunks: int, prominence: float = 0.1) -> tuple[list[int], list[int]]:
    """Representatives and boundaries (pool positions), as ``get_r_frames`` computes them.

    The pool is cut into ``chunks`` runs at ``linspace(0, N-1, chunks+1)``;
    within each run, boundaries are the peaks (``scipy.signal.find_peaks``,
    ``prominence``) of the cosine distance between consecutive frames (a peak
    at position i cuts between i and i+1, and i is the boundary); N-1 closes
    the last run. A shot's representative is the midpoint of its two
    boundaries. As in the reference, diffs never cross a run edge, and a last
    run without frames leaves the end boundary out.
    """
    from scipy.signal import find_peaks

    n = len(feats)
    x = np.asarray(feats, dtype=np.float64)
    edges = np.linspace(0, n - 1, chunks + 1, dtype=int)
    positions = np.arange(n)
    cuts, reps = [0], []
    for i, (start, end) in enumerate(zip(edges[:-1], edges[1:])):
        last = i == len(edges) - 2
        members = positions[(positions >= start) & ((positions <= end) if last else (positions < end))]
        if len(members) == 0:
            continue
        local = [cuts[-1]]
        if len(members) > 1:
            peaks, _ = find_peaks(_cosine_distance(x[members[:-1]], x[members[1:]]), prominence=prominence)
            found = [int(p) for p in members[peaks]]
            local += found
            cuts += found
        if last:
            cuts.append(n - 1)
            local.append(n - 1)
        reps += [(a + b) // 2 for a, b in zip(local[:-1], local[1:])]
    return reps, cuts


def dig_refine(rewards: Sequence[float] | NDArray[np.floating], boundaries: Sequence[int], wlen: int = 2) -> list[list[int]]:
    """The reference's two-mask refinement: merged ``[start, end]`` intervals (inclusive) around rewarded shots.

    Rewards are min-max scaled to [0, 100] (all equal → all 0); of the
    positive ones, mask 1 subtracts the mean and clips at 0 until no new
    zeros appear, mask 2 keeps those above half the maximum; the mask keeping
    fewer shots wins (mask 1 on ties). Shot i contributes
    ``[boundaries[i - wlen], boundaries[i + wlen]]`` with both indices clamped
    to ``[0, len(rewards) - 1]``: the window spans wlen shots before and
    wlen - 1 after, and never reaches the final boundary (the reference's
    asymmetry). No positive reward → the whole span.
    """
    raw = np.asarray(rewards, dtype=float)
    lo, hi = float(np.min(raw)), float(np.max(raw))
    scores = np.zeros_like(raw) if hi == lo else (raw - lo) / (hi - lo + 1e-8) * 100
    positive = np.flatnonzero(scores > 0)
    last = len(scores) - 1
    if len(positive) == 0:
        return [[boundaries[0], boundaries[-1]]]
    if len(positive) == 1:
        i = int(positive[0])
        return [[boundaries[max(0, i - wlen)], boundaries[min(last, i + wlen)]]]
    active = scores[positive]
    s1 = active.copy()
    while True:
        zeros = np.sum(s1 == 0)
        s1 = np.maximum(s1 - np.mean(s1), 0)
        if np.sum(s1 == 0) == zeros:
            break
    s2 = np.maximum(active - 0.5 * np.max(active), 0)
    final = s1 if np.sum(s1 > 0) <= np.sum(s2 > 0) else s2
    windows = []
    for j in np.flatnonzero(final > 0):
        i = int(positive[j])
        windows.append([boundaries[max(0, i - wlen)], boundaries[min(last, i + wlen)]])
    return dig_merge(windows) or [[boundaries[0], boundaries[-1]]]


def dig_merge(intervals: Sequence[Sequence[int]]) -> list[list[int]]:
    """Merge inclusive intervals that overlap or touch (start <= previous end), sorted by start.

    >>> dig_merge([[5, 9], [0, 3], [3, 4], [10, 12]])
    [[0, 4], [5, 9], [10, 12]]
    """
    out: list[list[int]] = []
    for start, end in sorted(([int(a), int(b)] for a, b in intervals), key=lambda iv: iv[0]):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def dig_linspace(intervals: Sequence[Sequence[int]], k: int) -> list[int]:
    """``k`` positions evenly spread (``linspace``, truncated) over the concatenated intervals; repeats when they hold fewer than ``k``.

    >>> dig_linspace([[0, 1], [10, 11]], 3)
    [0, 1, 11]
    """
    if not intervals or k <= 0:
        return []
    total = sum(end - start + 1 for start, end in intervals)
    out = []
    for point in np.linspace(0, total - 1, k, dtype=int):
        pos = int(point)
        for start, end in intervals:
            if pos < end - start + 1:
                out.append(int(start + pos))
                break
            pos -= end - start + 1
    return out


def dig_select(
    feats: NDArray[np.floating],
    relevance: NDArray[np.floating],
    duration: float,
    k: int,
    query_type: str,
    chunk_sec: float = 60.0,
    wlen: int = 2,
    prominence: float = 0.1,
) -> list[int]:
    """DIG as the reference computes one sample: ascending, with repeats when a refined span holds fewer than ``k`` frames.

    Global → ``linspace(0, N-1, k)``; local → shots, rewards = relevance of
    the representatives, :func:`dig_refine`, :func:`dig_linspace`.
    ``duration`` (seconds) sets the number of ``chunk_sec`` runs,
    ``ceil(int(duration) / chunk_sec)``, at least 1.
    """
    n = len(feats)
    if query_type == "global":
        return [int(i) for i in np.linspace(0, n - 1, k, dtype=int)]
    chunks = max(1, math.ceil(int(duration) / chunk_sec))
    reps, cuts = dig_shots(feats, chunks, prominence)
    rewards = np.asarray(relevance, dtype=np.float64)[reps]
    return dig_linspace(dig_refine(rewards, cuts, wlen), k)


@selectors.register("dig")
@dataclass(frozen=True)
class DIG(Selector):
    """DIG (Jialuo-Li/DIG, CVPR 2026): uniform for global questions, reward-refined intervals for local ones.

    Follows github.com/Jialuo-Li/DIG: a question is global or local
    (``query_type="auto"`` applies :func:`dig_query_type`, an offline rule
    written from the criteria of the reference's LLM prompt in ``utils.py``;
    ``"global"``/``"local"`` force one; no query counts as global). Global →
    ``linspace(0, N-1, k)`` (``video_refinement.py``, ``main``). Local →
    ``cafs.py``'s ``get_r_frames`` on the pool (:func:`dig_shots`: runs of
    ``chunk_sec`` = 60 s, boundaries at peaks of consecutive-frame cosine
    distance with prominence 0.1, one midpoint representative per shot),
    one reward per representative, ``video_refinement`` with ``wlen=2``
    (:func:`dig_refine`) and ``select_k_indices`` (:func:`dig_linspace`).

    Deviations: the reference samples 2 frames per second, embeds them with
    DINOv2 and maps positions to video frames; here the pool is that sample,
    its positions play the video frames, and the encoder's embeddings serve
    as features. Its rewards are 0-100 scores from a multimodal LLM per
    representative frame (``reward_assignment.py``); here the encoder's
    query relevance of the representative (only their order and ratios to
    the range matter after the reference's min-max scaling). A video
    shorter than 1 s gets one run (the reference finds no frames and fails).
    ``reference_exact=True`` returns the reference output as is, repeats
    included; the default removes repeats and fills to k with
    :func:`fill_to_k` (farthest in time).
    """

    param_ranges = {"chunk_sec": Range(gt=0), "wlen": Range(ge=0, integer=True), "prominence": Range(ge=0)}

    needs = frozenset({"embeddings", "relevance"})
    query_type: str = "auto"
    chunk_sec: float = 60.0
    wlen: int = 2
    prominence: float = 0.1
    reference_exact: bool = False
    supports_reference_exact: ClassVar[bool] = True

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        if self.query_type not in ("auto", "global", "local"):
            raise SelectionError(f"dig: query_type must be 'auto', 'global' or 'local', got {self.query_type!r}")
        if self.chunk_sec <= 0 or self.wlen < 0:
            raise SelectionError(f"dig needs chunk_sec > 0 and wlen >= 0, got chunk_sec={self.chunk_sec}, wlen={self.wlen}")
        assert features.embeddings is not None
        kind = self.query_type
        if kind == "auto":
            kind = "global" if query is None else dig_query_type(query.text)
        ts = pool.timestamps
        duration = pool.duration if pool.duration is not None else float(ts[-1] - ts[0])
        chosen = dig_select(features.embeddings, features.relevance(), duration, k, kind, self.chunk_sec, self.wlen, self.prominence)
        if self.reference_exact:
            return chosen
        return fill_to_k(chosen, k, len(pool), times=ts)
