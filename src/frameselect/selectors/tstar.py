"""T*: iterative keyframe search driven by object detections.

Ye et al., "Re-thinking Temporal Search for Long-Form Video Understanding"
(T*, CVPR 2025; the reference method of LV-Haystack). Reference code:
github.com/mll-lab-nu/TStar, ``TStar/interface_searcher.py``
(``TStarSearcher.search`` and the methods it calls), defaults from
``TStar/TStarFramework.py`` and ``LVHaystackBench/run_TStar_onDataset.py``.
See :class:`TStar`.

Detections are an input: an (N, O) matrix of per-frame object confidences
(0 = not detected) with O object names. :func:`detections_for` derives them
from the features: the ``imagenet_label`` encoder's class probabilities
(objects = ImageNet classes), the query relevance (one object, the query), or
a matrix you bring (:func:`load_detections` reads per-frame JSON or ``.npy``;
``frameselect select --detections FILE``).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import Range
from frameselect.registry import selectors
from frameselect.selectors._draws import weighted_sample
from frameselect.selectors.base import Selector, fill_to_k
from frameselect.types import CandidatePool, Features, Query

__all__ = [
    "TStar",
    "Detections",
    "TStarSearch",
    "tstar_search",
    "tstar_draw",
    "detections_for",
    "load_detections",
    "imagenet_objects",
    "question_objects",
]

#: object weights of the reference (``TStarSearcher.__init__``): targets 1.0, cues 0.5 (a cue overrides a target of the same name)
TARGET_WEIGHT, CUE_WEIGHT = 1.0, 0.5


@dataclass(frozen=True)
class Detections:
    """Per-frame object confidences ``conf`` (N, O), 0 where an object is not detected, and the O object names."""

    conf: NDArray[np.float64]
    objects: tuple[str, ...]
    targets: tuple[int, ...]
    cues: tuple[int, ...]

    def weights(self) -> NDArray[np.float64]:
        w = np.full(len(self.objects), CUE_WEIGHT)
        w[list(self.targets)] = TARGET_WEIGHT
        w[list(self.cues)] = CUE_WEIGHT
        return w


@dataclass
class TStarSearch:
    """The state the reference's searcher ends with."""

    score: NDArray[np.float64]
    visited: NDArray[np.bool_]
    iterations: int
    remaining: list[int]


def _frame_confidence(conf: NDArray[np.float64], weights: NDArray[np.float64], frame: int) -> float:
    """A grid cell's confidence: the best weighted confidence of the objects detected in the frame (0 if none)."""
    row = conf[frame]
    hit = row > 0
    return float(np.max(row[hit] * weights[hit])) if hit.any() else 0.0


def _best_confidences(conf: NDArray[np.float64], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`_frame_confidence` of every frame at once (the same products; a maximum does not depend on order)."""
    weighted = np.where(conf > 0, conf * weights[None, :], -np.inf)
    best = weighted.max(axis=1, initial=-np.inf)
    out: NDArray[np.float64] = np.where(np.isfinite(best), best, 0.0)
    return out


def _lerp_as_numpy(a: float, b: float, t: float) -> float:
    """numpy's ``_lerp`` (the ``"linear"`` quantile's interpolation) on floats: ``a + (b - a) t``, from ``b`` when ``t >= 0.5``."""
    d = b - a
    return b - d * (1.0 - t) if t >= 0.5 else a + d * t


def _percentile75(values: Sequence[float] | NDArray[np.float64]) -> float:
    """``float(np.percentile(values, 75))`` bit for bit: the two order statistics around ``(n - 1) * 0.75``, interpolated as numpy does.

    A few values (the 16 per search step) are sorted in Python, an array is
    partitioned at the two positions; either costs a fraction of
    ``np.percentile``'s dispatch. Values are finite (confidences and
    probabilities).
    """
    n = len(values)
    if n == 1:
        return float(values[0])
    position = (n - 1) * 0.75
    lo = math.floor(position)
    hi = lo + 1
    if isinstance(values, np.ndarray):
        part = np.partition(values, (lo, hi))
        a, b = float(part[lo]), float(part[hi])
    else:
        ordered = sorted(values)
        a, b = ordered[lo], ordered[hi]
    return _lerp_as_numpy(a, b, position - lo)


def _spread(score: NDArray[np.float64], confidences: Sequence[float], frames: Sequence[int], window: int) -> None:
    """``update_top_25_with_window``: frames at or above the 75th percentile lift their neighbours to score / (distance + 1), in order."""
    top = _percentile75(confidences)
    n = len(score)
    for frame, c in zip(frames, confidences):
        if c < top:
            continue
        for offset in range(-window, window + 1):
            j = frame + offset
            if 0 <= j < n:
                score[j] = max(score[j], score[frame] / (abs(offset) + 1))


def _spline_distribution(visited: NDArray[np.bool_], score: NDArray[np.float64], grid: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """``spline_keyframe_distribution``: a smoothing spline (s=0.5) through visited scores, floored at 1/N, sigmoid, normalised.

    ``grid`` is ``np.arange(N)`` as float64 (the frames the spline is evaluated at), made when not given.
    """
    from scipy.interpolate import UnivariateSpline

    n = len(score)
    idx = np.flatnonzero(visited)
    if len(idx) <= 3:  # too few points for a cubic spline (the reference cannot get here with N >= 16)
        return np.full(n, 1.0 / n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p: NDArray[np.float64] = UnivariateSpline(idx, score[idx], s=0.5)(np.arange(n, dtype=np.float64) if grid is None else grid)
    # 1 / (1 + exp(-max(1/n, spline))), one operation at a time in one buffer
    np.maximum(p, 1.0 / n, out=p)
    np.negative(p, out=p)
    np.exp(p, out=p)
    p += 1.0
    np.divide(1.0, p, out=p)
    p /= p.sum()
    return p


def _sample(n: int, count: int, first: bool, p_dist: NDArray[np.float64], visited: NDArray[np.bool_], rs: np.random.RandomState) -> list[int]:
    """``sample_frames``: evenly spaced at first, then a draw from the top quarter of unvisited frames.

    The draw is ``rs.choice(n, size=count, replace=False, p=p)``'s without
    its argument checks (:func:`~frameselect.selectors._draws.weighted_sample`):
    ``p`` is finite, non-negative and has ``count`` positive entries by
    construction; where it is not finite numpy's call raises as before.
    """
    count = min(count, n)
    if first:
        return [int(i) for i in np.arange(0, n, n // count)[:count]]
    raised = p_dist + count / n
    p = raised * (~visited)
    p *= p >= _percentile75(p)
    total = p.sum()
    if total == 0 or np.count_nonzero(p) < count:
        p = raised
        total = p.sum()
    p = p / total
    if not math.isfinite(total):
        return [int(i) for i in rs.choice(n, size=count, replace=False, p=p)]
    return weighted_sample(rs.random_sample, count, p)


def tstar_search(
    det: Detections,
    random_state: np.random.RandomState,
    *,
    grid: tuple[int, int] = (4, 4),
    threshold: float = 0.7,
    budget: float = 1.0,
    max_budget: int = 1000,
    window: int = 5,
    single: NDArray[np.float64] | None = None,
) -> TStarSearch:
    """Run the reference's search loop on given detections (``TStarSearcher.search`` up to its final draw).

    Each iteration samples ``rows * cols`` frames, scores each by its best
    weighted detection, spreads the top quarter to neighbours, refits the
    spline distribution, then verifies: a sampled frame where a remaining
    target is detected is re-scored from ``single`` (the reference re-runs
    the detector on that frame alone; default: the same confidences), and the
    target is found when it is detected there and the frame's best weighted
    confidence exceeds ``threshold``. It stops when every target is found or
    ``min(max_budget, N * budget)`` frames are spent.
    """
    conf = np.asarray(det.conf, dtype=np.float64)
    n = conf.shape[0]
    solo = conf if single is None else np.asarray(single, dtype=np.float64)
    weights = det.weights()
    per_grid = grid[0] * grid[1]
    score = np.zeros(n) + 1e-6
    visited = np.zeros(n, dtype=bool)
    p_dist = np.ones(n) * threshold * 0.3
    remaining = list(det.targets)
    spend = min(max_budget, n * budget)
    iterations = 0
    best = _best_confidences(conf, weights)
    grid_points = np.arange(n, dtype=np.float64)
    while remaining and spend > 0:
        frames = _sample(n, per_grid, iterations == 0, p_dist, visited, random_state)
        spend -= per_grid
        confidences = best[frames].tolist()
        for f, c in zip(frames, confidences):
            visited[f] = True
            score[f] = c
        _spread(score, confidences, frames, window)
        p_dist = _spline_distribution(visited, score, grid_points)
        iterations += 1
        _verify(score, frames, remaining, conf, solo, weights, threshold, best if single is None else None)
    return TStarSearch(score, visited, iterations, remaining)


def _verify(
    score: NDArray[np.float64],
    frames: Sequence[int],
    remaining: list[int],
    conf: NDArray[np.float64],
    solo: NDArray[np.float64],
    weights: NDArray[np.float64],
    threshold: float,
    solo_best: NDArray[np.float64] | None = None,
) -> None:
    """The searcher's verification: a sampled frame where a remaining target is detected is re-scored from
    ``solo`` (the single-frame detections), and the target is found (removed) when it is detected there and
    the frame's best weighted confidence exceeds ``threshold``; at most one target per frame.
    ``solo_best``, when given, is :func:`_best_confidences` of ``solo`` (the same values, computed once)."""
    for f in frames:
        for target in list(remaining):
            if conf[f, target] > 0:
                best = float(solo_best[f]) if solo_best is not None else _frame_confidence(solo, weights, f)
                score[f] = best
                if solo[f, target] > 0 and best > threshold:
                    remaining.remove(target)
                    break


def tstar_draw(score: NDArray[np.float64], k: int, random_state: np.random.RandomState) -> list[int] | None:
    """``pop_frames``: ``k`` frames drawn without replacement with probability proportional to score, ascending.

    ``None`` where the reference's draw fails: fewer than ``k`` frames with a
    non-zero score (all zero included).
    """
    total = float(score.sum())
    if total <= 0 or np.count_nonzero(score) < k:
        return None
    p = score / total
    if not math.isfinite(total) or p.min() < 0 or np.count_nonzero(p) < k:  # numpy's call raises (no non-negative scores bring this)
        return sorted(int(i) for i in random_state.choice(len(score), size=k, replace=False, p=p))
    return sorted(weighted_sample(random_state.random_sample, k, p))


# -- detections ---------------------------------------------------------------------------


def _imagenet_probabilities(features: Features) -> NDArray[np.float64] | None:
    from frameselect.encoders.offline import N_CLASSES

    emb = features.embeddings
    if not features.encoder_id.startswith("imagenet_label") or emb is None or emb.shape[1] < N_CLASSES or features.text is None:
        return None
    from frameselect.encoders.offline import probabilities

    return probabilities(emb)


def imagenet_objects(text_embedding: NDArray[Any], n_targets: int = 1, n_cues: int = 3) -> tuple[list[int], list[int]]:
    """The offline grounding rule for ImageNet objects: the query's top ``n_targets`` classes are targets, the next ``n_cues`` cues.

    The query's class distribution q comes back from its ``imagenet_label``
    text embedding (``[sqrt(q), 0]``); ties go to the lower class id.
    """
    from frameselect.encoders.offline import N_CLASSES

    q = np.square(np.asarray(text_embedding, dtype=np.float64)[:N_CLASSES])
    order = [int(i) for i in np.argsort(-q, kind="stable")]
    return order[:n_targets], order[n_targets : n_targets + n_cues]


def question_objects(objects: Sequence[str], question: str | None) -> tuple[list[int], list[int]]:
    """The offline grounding rule for named objects: those the question names (whole words, any case) are targets, the others cues.

    When the question names none of them, or there is no question, every object is a target.

    >>> question_objects(["couch", "tv", "chair"], "What is the colour of the couch?")
    ([0], [1, 2])
    """
    if question:
        text = question.lower()
        named = [i for i, o in enumerate(objects) if re.search(rf"\b{re.escape(o.lower())}(e?s)?\b", text)]
        if named:
            return named, [i for i in range(len(objects)) if i not in named]
    return list(range(len(objects))), []


def _pick(names: Sequence[str], wanted: Sequence[str], what: str) -> list[int]:
    index = {name: i for i, name in enumerate(names)}
    missing = [w for w in wanted if w not in index]
    if missing:
        shown = ", ".join(list(names)[:12]) + (" ..." if len(names) > 12 else "")
        raise SelectionError(f"tstar: {what} {missing} are not among the detector's objects ({shown})")
    return [index[w] for w in wanted]


def detections_for(
    features: Features,
    query: Query | None,
    *,
    detector: str = "auto",
    objects: Sequence[str] = (),
    targets: Sequence[str] = (),
    cues: Sequence[str] = (),
    n_targets: int = 1,
    n_cues: int = 3,
    min_confidence: float = 0.005,
) -> Detections:
    """Per-frame object confidences and the target and cue objects for one pool.

    ``detector``: ``"imagenet"`` (``imagenet_label`` embeddings: class
    probabilities as object confidences, the classifier seeing each frame as
    one cell of T*'s grid), ``"relevance"`` (one object, the query, with
    confidence = relevance clipped to [0, 1]), ``"matrix"`` (the embeddings
    are your (N, O) confidences, columns named by ``objects``) or ``"auto"``
    (imagenet when the features come from that encoder, else relevance).
    Confidences at or below ``min_confidence`` count as not detected (the
    reference's OWL-ViT detector keeps boxes above 0.005). Targets and cues
    are given by name, else chosen by :func:`imagenet_objects` or
    :func:`question_objects`.
    """
    mode = detector
    probs = _imagenet_probabilities(features) if mode in ("auto", "imagenet") else None
    if mode == "imagenet" and probs is None:
        raise SelectionError("tstar detector='imagenet' needs features from the imagenet_label encoder (embeddings and query text)")
    if mode == "auto":
        mode = "imagenet" if probs is not None else "relevance"
    if mode == "imagenet":
        assert probs is not None and features.text is not None
        if targets or cues:
            from frameselect.encoders._mobilenet_v2 import imagenet_class_names

            names = imagenet_class_names()
            t, c = _pick(names, targets, "targets"), _pick(names, cues, "cues")
        else:
            t, c = imagenet_objects(features.text, n_targets, n_cues)
            names = tuple(f"imagenet:{i}" for i in range(probs.shape[1]))
        cols = t + c
        conf = probs[:, cols]
        names = tuple(names[i] for i in cols)
    elif mode == "relevance":
        if targets or cues:
            raise SelectionError("tstar detector='relevance' has a single object (the query); targets and cues cannot be named")
        conf = np.clip(features.relevance(), 0.0, 1.0)[:, None]
        names = ("query",)
    elif mode == "matrix":
        if features.embeddings is None:
            raise SelectionError("tstar detector='matrix' reads the detections from the embeddings array (N, objects)")
        conf = np.asarray(features.embeddings, dtype=np.float64)
        names = tuple(objects) if objects else tuple(str(i) for i in range(conf.shape[1]))
        if len(names) != conf.shape[1]:
            raise SelectionError(f"tstar: {len(names)} object names for {conf.shape[1]} detection columns")
        if np.any(conf < 0):
            raise SelectionError("tstar: detection confidences must be >= 0")
        if targets or cues:
            t, c = _pick(names, targets, "targets"), _pick(names, cues, "cues")
        else:
            t, c = question_objects(names, query.text if query else None)
        keep = t + c
        conf, names = conf[:, keep], tuple(names[i] for i in keep)
    else:
        raise SelectionError(f"tstar: detector must be 'auto', 'imagenet', 'relevance' or 'matrix', got {detector!r}")
    conf = np.where(conf > min_confidence, conf, 0.0)
    n_t = len(names) if mode == "relevance" else len(t)
    if n_t == 0:
        raise SelectionError("tstar needs at least one target object")
    return Detections(conf, names, tuple(range(n_t)), tuple(range(n_t, len(names))))


def load_detections(path: str | Path) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """Read bring-your-own detections: ``.npy`` (N, O) confidences, or JSON.

    JSON is either ``{"objects": [names], "frames": [{name: confidence}, ...]}``
    or a bare list of per-frame ``{name: confidence}`` objects (objects in
    order of first appearance); one entry per candidate frame, absent
    objects are not detected (0). Returns the matrix and the object names
    (``"0"``, ``"1"``, ... for ``.npy``).
    """
    p = Path(path)
    if not p.is_file():
        raise SelectionError(f"detections {p}: no such file")
    if p.suffix.lower() == ".npy":
        try:
            conf = np.load(p, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise SelectionError(f"detections {p}: not a readable .npy array ({exc})") from None
        if conf.ndim != 2 or conf.dtype.kind not in "biuf":
            raise SelectionError(f"detections {p}: expected a numeric (N, objects) array, got shape {conf.shape}, dtype {conf.dtype}")
        return conf.astype(np.float64), tuple(str(i) for i in range(conf.shape[1]))
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise SelectionError(f"detections {p}: not readable JSON ({exc})") from None
    frames = data.get("frames") if isinstance(data, dict) else data
    if not isinstance(frames, list) or not all(isinstance(f, dict) for f in frames):
        raise SelectionError(f"detections {p}: expected a list of per-frame {{object: confidence}} records, or {{'objects': [...], 'frames': [...]}}")
    names: list[str] = [str(o) for o in data.get("objects", [])] if isinstance(data, dict) else []
    for f in frames:
        names += [str(o) for o in f if str(o) not in names]
    col = {name: i for i, name in enumerate(names)}
    conf = np.zeros((len(frames), len(names)))
    for i, f in enumerate(frames):
        for name, value in f.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                raise SelectionError(f"detections {p}: frame {i}, object {name!r}: confidence must be a finite number >= 0, got {value!r}")
            conf[i, col[str(name)]] = float(value)
    return conf, tuple(names)


@selectors.register("tstar")
@dataclass(frozen=True)
class TStar(Selector):
    """T* temporal search (Ye et al., CVPR 2025; mll-lab-nu/TStar).

    Follows ``TStarSearcher.search`` (``TStar/interface_searcher.py``): the
    pool plays the reference's 1-fps frames; targets weigh 1.0 and cues 0.5;
    each iteration detects on a ``grid`` (4×4) of sampled frames (evenly
    spaced first, then drawn from the top quarter of unvisited frames under a
    spline-smoothed score distribution), spreads the top quarter's scores to
    ±5 neighbours, verifies sampled frames where a target is detected, and
    stops when every target is found or ``min(1000, N × budget)`` frames are
    spent; the k frames are then drawn in proportion to the score (not the
    top k) and sorted. Defaults are ``run_TStar_onDataset.py``'s: 4×4 grid,
    ``threshold=0.7``, ``budget=1.0`` (``TStarFramework.py``'s ``run_tstar``
    uses 0.6 and 0.5). Detections, targets and cues: :func:`detections_for` (the reference
    asks GPT-4o for target and cue objects and runs OWL-ViT or YOLO-World).

    Deviations: the reference's grid detections see each frame as a 200×95
    tile of the collage and its verification re-runs the detector on a
    600×285 frame; here both read the same per-frame confidences. Its draws
    use numpy's global ``RandomState``; here a ``RandomState`` seeded from the
    selection's generator (the same algorithm, so a reference run seeded the
    same way is reproduced exactly). The reference fails on pools shorter
    than the grid (here fewer frames are sampled) and when fewer than k
    frames have a non-zero score (here ``reference_exact=True`` returns those
    frames, possibly none; the default fills to k with :func:`fill_to_k`,
    farthest in time).

    Cost: the search's iterations (63 at N = 3,600) each fit scipy's
    ``UnivariateSpline`` through the visited scores and evaluate it at every
    frame (30-40 ms in all), and draw 16 frames as ``RandomState.choice``
    draws them, without its argument checks (the same draws and generator
    state); every frame's best weighted confidence is computed once per
    search, the percentiles without ``np.percentile``, the sigmoid in one
    buffer (the same values). CPU time at N = 3,600 on one loaded core,
    medians of three alternating comparisons: 46-51 ms against 53-55 ms
    before the fourth round of ``docs/performance-selectors.md``
    (1.08-1.17x), about the 50 ms target; the spline fits are the
    reference's and each depends on the last draw, so they cannot be
    batched.
    """

    param_ranges = {
        "n_targets": Range(ge=1, integer=True),
        "n_cues": Range(ge=0, integer=True),
        "min_confidence": Range(ge=0, le=1),
        "grid_rows": Range(ge=1, integer=True),
        "grid_cols": Range(ge=1, integer=True),
        "threshold": Range(ge=0, le=1),
        "budget": Range(gt=0),
        "max_budget": Range(ge=1, integer=True),
        "window": Range(ge=0, integer=True),
    }

    detector: str = "auto"
    objects: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    cues: tuple[str, ...] = ()
    n_targets: int = 1
    n_cues: int = 3
    min_confidence: float = 0.005
    grid_rows: int = 4
    grid_cols: int = 4
    threshold: float = 0.7
    budget: float = 1.0
    max_budget: int = 1000
    window: int = 5
    reference_exact: bool = False
    supports_reference_exact: ClassVar[bool] = True

    def __post_init__(self) -> None:
        for name in ("objects", "targets", "cues"):
            object.__setattr__(self, name, tuple(str(v) for v in getattr(self, name)))

    @property
    def needs(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset({"embeddings"}) if self.detector == "matrix" else frozenset({"embeddings", "relevance"})

    def _check(self) -> None:
        if self.grid_rows < 1 or self.grid_cols < 1 or self.budget <= 0 or self.max_budget < 1 or self.window < 0 or self.n_targets < 1 or self.n_cues < 0:
            raise SelectionError(f"tstar needs grid_rows, grid_cols, max_budget, n_targets >= 1, budget > 0, window, n_cues >= 0; got {self}")

    def _detections(self, features: Features, query: Query | None) -> Detections:
        """Target and cue confidences per frame, from this selector's detector settings."""
        return detections_for(
            features,
            query,
            detector=self.detector,
            objects=self.objects,
            targets=self.targets,
            cues=self.cues,
            n_targets=self.n_targets,
            n_cues=self.n_cues,
            min_confidence=self.min_confidence,
        )

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        self._check()
        rs = np.random.RandomState(int(rng.integers(0, 2**32)))
        state = tstar_search(
            self._detections(features, query),
            rs,
            grid=(self.grid_rows, self.grid_cols),
            threshold=self.threshold,
            budget=self.budget,
            max_budget=self.max_budget,
            window=self.window,
        )
        return _finish(state.score, k, rs, self.reference_exact, pool)


def _finish(score: NDArray[np.float64], k: int, rs: np.random.RandomState, exact: bool, pool: CandidatePool) -> list[int]:
    """The final draw, or (where the reference's draw fails) every frame with a non-zero score; filled to k farthest in time unless ``exact``."""
    drawn = tstar_draw(score, k, rs)
    if drawn is None:
        drawn = [int(i) for i in np.flatnonzero(score > 0)]
    return drawn if exact else fill_to_k(drawn, k, len(pool), times=pool.timestamps)
