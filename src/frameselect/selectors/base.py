"""The selector interface and the contract every selector keeps.

A selector is a frozen dataclass whose fields are its hyper-parameters, so
configuration, ``repr`` and fingerprints are mechanical. Subclasses declare
what features they need and implement :meth:`Selector._select`; the public
:meth:`Selector.select` validates the budget and the inputs and enforces the
contract: exactly ``min(k, N)`` unique, ascending, in-range indices. A
selector with a true ``reference_exact`` field is the exception: it receives
the budget unclamped and returns what its reference code returns, in range
but possibly empty, short or repeating; the :class:`Selection` is flagged
``reference_exact=True``. The :class:`Selection` also counts (``filled``)
the frames that :func:`fill_to_k` supplied during the call, so a record shows
how much of a selection is the selector's own.

Writing a new selector takes a few lines::

    @selectors.register("every_other")
    @dataclass(frozen=True)
    class EveryOther(Selector):
        def _select(self, pool, query, k, features, rng):
            return list(range(0, len(pool), 2))[:k]
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import ContractError, SelectionError
from frameselect.parts import Part, check_budget
from frameselect.types import CandidatePool, Features, Query, Sample, Selection

__all__ = ["Scored", "Selector", "read_output", "check_budget", "check_selection", "check_finite", "fill_to_k", "normalize_minmax"]

#: Feature kinds a selector may declare in ``needs``.
FEATURE_KINDS = frozenset({"embeddings", "text", "relevance", "pixels"})


def check_finite(name: str, values: NDArray[Any]) -> NDArray[Any]:
    arr = np.asarray(values)
    if arr.size and not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise SelectionError(f"{name} contain {bad} NaN or infinite value(s); clean the features before selecting")
    return arr


def normalize_minmax(x: NDArray[Any]) -> NDArray[np.float64]:
    """Global min-max normalisation to [0, 1]; a constant vector maps to zeros."""
    x = np.asarray(x, dtype=np.float64)
    lo, hi = float(np.min(x)), float(np.max(x))
    if hi - lo <= 0.0:
        return np.zeros_like(x)
    return (x - lo) / (hi - lo)


#: the frames fill_to_k supplied during the current Selector.select call (None outside one)
_FILLED: ContextVar[set[int] | None] = ContextVar("frameselect_filled", default=None)


@contextmanager
def _recording_fills() -> Iterator[set[int]]:
    """Collect, for the duration of one ``select``, the frames every :func:`fill_to_k` call adds."""
    frames: set[int] = set()
    token = _FILLED.set(frames)
    try:
        yield frames
    finally:
        _FILLED.reset(token)


def _note_filled(frames: Sequence[int]) -> None:
    recorder = _FILLED.get()
    if recorder is not None:
        recorder.update(frames)


def fill_to_k(chosen: Sequence[int], k: int, n: int, priority: NDArray[Any] | None = None, times: NDArray[Any] | None = None) -> list[int]:
    """Deduplicate ``chosen`` (keeping first occurrences) and fill up to ``k``.

    The fill rule, shared by every selector whose reference can return fewer
    frames than asked or duplicates: add the not-yet-chosen frames in
    descending ``priority`` (ties broken by the earlier frame); without a
    priority, add one at a time the frame farthest from those already chosen,
    measured in ``times`` (seconds) when given, else in pool positions
    (earliest on ties; the first frame when nothing is chosen yet).
    Returns ascending indices. Inside :meth:`Selector.select` the frames
    added here are counted in the selection's ``filled``.

    >>> fill_to_k([5, 5, 2], 4, 10)
    [0, 2, 5, 9]
    >>> fill_to_k([1], 3, 4, priority=[0.0, 9.0, 5.0, 5.0])
    [1, 2, 3]
    """
    k = min(k, n)
    seen: dict[int, None] = {}
    for i in chosen:
        i = int(i)
        if 0 <= i < n and i not in seen:
            seen[i] = None
        if len(seen) == k:
            break
    out = list(seen)
    own = len(out)
    if own == k:
        return sorted(out)
    if priority is not None:
        order = np.lexsort((np.arange(n), -np.asarray(priority, dtype=np.float64)))
        for i in order:
            if len(out) == k:
                break
            if int(i) not in seen:
                seen[int(i)] = None
                out.append(int(i))
        _note_filled(out[own:])
        return sorted(out)
    pos = np.asarray(times, dtype=np.float64) if times is not None else np.arange(n, dtype=np.float64)
    dist = np.full(n, np.inf)
    for i in out:
        dist = np.minimum(dist, np.abs(pos - pos[i]))
    taken = np.zeros(n, dtype=bool)
    taken[out] = True
    while len(out) < k:
        i = int(np.argmax(np.where(taken, -1.0, dist)))
        out.append(i)
        taken[i] = True
        dist = np.minimum(dist, np.abs(pos - pos[i]))
    _note_filled(out[own:])
    return sorted(out)


@dataclass(frozen=True)
class Scored:
    """What :meth:`Selector._select` returns when it has a score per chosen frame: the indices and their scores.

    A selector without scores returns its indices alone (any sequence of ints, a tuple included).
    """

    indices: Sequence[int]
    scores: Sequence[float]

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.scores):
            raise ContractError(f"Scored holds {len(self.indices)} indices but {len(self.scores)} scores")


def read_output(out: Sequence[int] | Scored, selector: str = "selector") -> tuple[Sequence[int], Sequence[float] | None]:
    """(indices, scores or None) of what :meth:`Selector._select` returned: indices, or :class:`Scored`.

    Anything else (the ``(indices, scores)`` pair that 0.1 read, for one) is a :class:`ContractError`.
    """
    indices, scores = (out.indices, out.scores) if isinstance(out, Scored) else (out, None)
    try:
        return [int(i) for i in indices], scores
    except (TypeError, ValueError) as exc:
        raise ContractError(
            f"selector {selector!r} returned {type(out).__name__} holding something other than frame indices ({exc}); _select returns indices or Scored(indices, scores)"
        ) from exc


def check_selection(selector: Any, selection: Selection, k: int | None, n: int, sample: Sample | None = None, *, video: str | None = None) -> None:
    """The selector contract, the one check of it: :meth:`Selector.select` checks its own output, the run every selection it uses.

    ``min(k, N)`` unique, ascending indices into a pool of ``n``; ``k=None``: any number of them (a
    video's part of a question over several videos, whose count a joint selector or a budget policy
    decides). A selector in reference-exact mode returns its reference's raw output, so only the
    range is checked. A breach raises :class:`ContractError` naming the selector, the sample and
    what is wrong.
    """
    idx = list(selection.indices)
    problems = [f"index {i} is outside the pool of {n}" for i in idx if not 0 <= i < n][:1]
    if not (selection.reference_exact or getattr(selector, "reference_exact", False)):
        if len(set(idx)) != len(idx):
            problems.append("duplicate indices")
        if idx != sorted(idx):
            problems.append("indices not ascending")
        if k is not None and len(idx) != min(k, n):
            problems.append(f"{len(idx)} indices where min(k, N) = {min(k, n)} are due")
    if problems:
        where = "" if sample is None else f" on sample {sample.id!r}"
        where += "" if video is None else f" in video {video!r}"
        asked = f"k={k}, N={n}" if k is not None else f"N={n}"
        raise ContractError(
            f"selector {selector.name!r} broke its contract{where}: {'; '.join(problems)} (returned {idx[:20]} for {asked}); "
            "a selector returns min(k, N) unique ascending pool indices: fix the selector"
        )


@dataclass(frozen=True)
class Selector(Part):
    """Base class of all selectors. Fields are hyper-parameters."""

    kind: ClassVar[str] = "selectors"
    #: feature kinds this selector needs: "embeddings", "text", "relevance", "pixels"
    needs: ClassVar[frozenset[str]] = frozenset()
    #: capabilities of the answering backend the selector ranks frames through (``answerer_attention``); the plan checks the answerer declares them
    needs_answerer: ClassVar[frozenset[str]] = frozenset()
    #: the selector has a mode that returns what its reference code returns
    #: (it then has a ``reference_exact`` field, which overrides the default below)
    supports_reference_exact: ClassVar[bool] = False
    #: reference-exact mode is on (a plain class attribute, not a field: only
    #: selectors that support the mode take it as a parameter)
    reference_exact = False

    @property
    def requires_weights(self) -> bool:
        """True for a trained selector that has no weights to run with (benchmarks skip it)."""
        return False

    def frame_scales(self, n: int) -> tuple[float, ...] | None:
        """The fractions of the decoded size that ``n`` selected frames are sent at, by rank (most relevant first).

        None (the default): every frame as decoded. A mixed-resolution
        selector returns its rule here, and its selections carry each frame's
        scale (``Selection.scales``); a run at a token budget plans its frame
        count from this rule (:func:`frameselect._engine.token_budget.plan_mixed`).
        """
        return None

    def select(
        self,
        pool: CandidatePool,
        query: Query | None,
        k: int,
        features: Features | None = None,
        *,
        seed: int = 0,
        rng: np.random.Generator | None = None,
    ) -> Selection:
        k = check_budget(k)
        features = features if features is not None else Features()
        n = len(pool)
        if n == 0:
            raise SelectionError(f"candidate pool of {pool.video_id!r} is empty")
        self._check_features(features, n)
        generator = rng if rng is not None else np.random.default_rng(seed)
        exact = bool(self.reference_exact)
        with _recording_fills() as fill_frames:
            start = time.perf_counter()
            # reference-exact mode sees the budget as given: the reference decides what k > N means
            out = self._select(pool, query, k if exact else min(k, n), features, generator)
            latency = time.perf_counter() - start
        indices, scores = read_output(out, self.name)
        idx = [int(i) for i in indices]
        if exact:
            self._check_range(idx, n)
        selection = Selection(
            indices=tuple(idx),
            scores=None if scores is None else tuple(float(s) for s in scores),
            selector=self.name,
            latency_s=latency,
            reference_exact=exact,
            filled=len(set(idx) & fill_frames),
        )
        check_selection(self, selection, k, n)
        return selection

    def _check_features(self, features: Features, n: int) -> None:
        needs = self.needs
        if "embeddings" in needs:
            if features.embeddings is None:
                raise SelectionError(f"selector {self.name!r} needs frame embeddings; pass an encoder or embeddings")
            if features.embeddings.shape[0] != n:
                raise SelectionError(f"{features.embeddings.shape[0]} frame embeddings for a pool of {n} frames")
            check_finite("frame embeddings", features.embeddings)
        if "text" in needs:
            if features.text is None:
                raise SelectionError(f"selector {self.name!r} needs a text embedding of the query")
            check_finite("text embedding", features.text)
        if "relevance" in needs:
            if features.scores is None and (features.embeddings is None or features.text is None):
                raise SelectionError(f"selector {self.name!r} needs query relevance: per-frame scores, or frame and text embeddings")
            if features.scores is not None:
                if features.scores.shape != (n,):
                    raise SelectionError(f"per-frame scores have shape {features.scores.shape}, expected ({n},)")
                check_finite("per-frame scores", features.scores)
            elif features.embeddings is not None and features.text is not None:
                check_finite("frame embeddings", features.embeddings)
                check_finite("text embedding", features.text)
                if features.embeddings.shape[0] != n:
                    raise SelectionError(f"{features.embeddings.shape[0]} frame embeddings for a pool of {n} frames")
        if "pixels" in needs:
            if features.pixels is None:
                raise SelectionError(f"selector {self.name!r} needs decoded frames (pixels)")
            if features.pixels.shape[0] != n:
                raise SelectionError(f"{features.pixels.shape[0]} frames of pixels for a pool of {n} frames")

    def _check_range(self, idx: list[int], n: int) -> None:
        bad = [i for i in idx if not 0 <= i < n]
        if bad:
            raise SelectionError(
                f"selector {self.name!r} in reference-exact mode: the reference returned indices {bad[:10]} outside the pool of {n} frames; "
                "this output names no frame, so it cannot be used (drop reference_exact to get the documented fill rule)"
            )

    def _select(
        self,
        pool: CandidatePool,
        query: Query | None,
        k: int,
        features: Features,
        rng: np.random.Generator,
    ) -> Sequence[int] | Scored:
        """Return the chosen indices, or :class:`Scored` (the indices and a score for each).

        ``k`` is already ``min(k, N)``, except for a selector whose
        ``reference_exact`` is true: it gets the budget as given and returns
        what its reference returns (possibly empty, short or repeating).
        """
        raise NotImplementedError
