"""A conformance suite any selector can run on itself, built-in or third-party.

Like scikit-learn's ``check_estimator``::

    from frameselect.testing import check_selector

    check_selector("mmr")                  # a registered name
    check_selector(MySelector(alpha=0.3))  # an instance of your own

It builds synthetic candidate pools and features for exactly what the
selector declares in ``needs`` and checks the contract every selector keeps:

- exactly ``min(k, N)`` unique, ascending, in-range indices (a selector whose
  ``reference_exact`` is true is exempt from count, uniqueness and order; its
  indices must still be in range);
- the same seed gives the same selection;
- the pool and the features are left as they were;
- edge cases: ``k >= N``, ``k = 1``, ``N = 1``, ``N = 2``, identical frames,
  constant relevance, relevance from embeddings · text instead of scores;
- NaN or infinite values in any feature the selector reads raise
  :class:`~frameselect.errors.SelectionError`, and so does ``k < 1``.

A failed check raises ``AssertionError`` whose message names the selector, the
case and what went wrong; success returns ``None``.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import parameter_names, registered_name_of
from frameselect.selectors.base import FEATURE_KINDS, Selector, read_output
from frameselect.testing._core import Check, check_config_round_trip, label_of
from frameselect.types import CandidatePool, Features, Query, Selection

__all__ = ["check_selector", "selector_checks", "contract_problem", "synthetic_pool", "synthetic_features", "SyntheticVideo"]

_QUERY = Query("What does the person put on the table?", ("a cup", "a book", "a phone", "a key"))


@dataclass(frozen=True)
class SyntheticVideo:
    """A pool and its features: ``shots`` runs of similar frames at irregular times."""

    pool: CandidatePool
    features: Features


def synthetic_pool(n: int, *, seed: int = 20240601, video_id: str = "synthetic") -> CandidatePool:
    """``n`` candidate frames at irregular, strictly ascending times (steps 0.25–1.5 s)."""
    rng = np.random.default_rng(seed)
    steps = rng.uniform(0.25, 1.5, size=n)
    timestamps = np.cumsum(steps) - steps[0]
    return CandidatePool(video_id=video_id, timestamps=timestamps, frame_indices=np.arange(n) * 3, policy="synthetic", duration=float(timestamps[-1] + 1.0))


def synthetic_features(
    needs: frozenset[str] | set[str],
    n: int,
    *,
    dim: int = 16,
    pixel_shape: tuple[int, int] = (9, 16),
    shots: int = 4,
    seed: int = 20240601,
    relevance_from: str = "scores",
) -> Features:
    """Features for the kinds in ``needs``, from a video of ``shots`` shots.

    Frame embeddings (N, dim) are L2-normalised noisy copies of one centre per
    shot; the text embedding is near one shot's centre; scores are
    embeddings · text; pixels (N, h, w, 3) uint8 are a shot colour plus noise.
    ``relevance_from="scores"`` serves relevance as precomputed scores,
    ``"embeddings"`` as frame and text embeddings (no scores).
    """
    rng = np.random.default_rng(seed)
    shot_of = np.minimum((np.arange(n) * shots) // max(n, 1), shots - 1)
    centres = rng.normal(size=(shots, dim))
    emb = centres[shot_of] + 0.35 * rng.normal(size=(n, dim))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    text = centres[shots // 2] + 0.5 * rng.normal(size=dim)
    text /= np.linalg.norm(text)
    out: dict[str, Any] = {}
    use_embeddings = "embeddings" in needs or ("relevance" in needs and relevance_from == "embeddings")
    use_text = "text" in needs or ("relevance" in needs and relevance_from == "embeddings")
    if use_embeddings:
        out["embeddings"] = emb
    if use_text:
        out["text"] = text
    if "relevance" in needs and relevance_from == "scores":
        out["scores"] = emb @ text
    if "pixels" in needs:
        h, w = pixel_shape
        colours = rng.integers(0, 256, size=(shots, 3))
        noise = rng.integers(-12, 13, size=(n, h, w, 3))
        out["pixels"] = np.clip(colours[shot_of][:, None, None, :] + noise, 0, 255).astype(np.uint8)
    return Features(encoder_id="synthetic", **out)


def contract_problem(indices: Sequence[int], k: int, n: int, *, exact: bool = False) -> str | None:
    """What is wrong with ``indices`` as a selection of ``k`` from ``n`` frames, or ``None``.

    >>> contract_problem([0, 2, 2], 3, 5)
    'duplicate indices [2]'
    >>> contract_problem([3, 1], 2, 5)
    'indices are not ascending: [3, 1]'
    >>> contract_problem([1, 3], 2, 5) is None
    True
    """
    idx = [int(i) for i in indices]
    bad = [i for i in idx if not 0 <= i < n]
    if bad:
        return f"indices {bad[:10]} out of range for a pool of N={n} frames"
    if exact:
        return None
    want = min(k, n)
    dupes = sorted(i for i, c in Counter(idx).items() if c > 1)
    if dupes:
        return f"duplicate indices {dupes[:10]}"
    if len(idx) != want:
        return f"returned {len(idx)} indices, expected exactly min(k, N) = {want} (k={k}, N={n})"
    if idx != sorted(idx):
        return f"indices are not ascending: {idx[:20]}"
    return None


# -- the checker --------------------------------------------------------------


@dataclass
class _Checker:
    selector: Any
    label: str
    exact: bool
    needs: frozenset[str]
    dim: int
    pixel_shape: tuple[int, int]

    def fail(self, case: str, message: str) -> AssertionError:
        return AssertionError(f"check_selector({self.label}) [{case}]: {message}")

    def video(self, n: int, **kwargs: Any) -> SyntheticVideo:
        return SyntheticVideo(synthetic_pool(n), synthetic_features(self.needs, n, dim=self.dim, pixel_shape=self.pixel_shape, **kwargs))

    def select(self, case: str, video: SyntheticVideo, k: int, seed: int) -> Selection:
        try:
            out = self.selector.select(video.pool, _QUERY, k, video.features, seed=seed)
        except AssertionError as exc:  # Selector.select's own contract check
            problem = self.raw_problem(video, k, seed)
            raise self.fail(case, f"k={k}, N={len(video.pool)}, seed={seed}: {problem or exc}") from exc
        except Exception as exc:
            raise self.fail(case, f"k={k}, N={len(video.pool)}, seed={seed}: select raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(out, Selection):
            raise self.fail(case, f"select returned {type(out).__name__}, expected a frameselect.types.Selection")
        return out

    def raw_problem(self, video: SyntheticVideo, k: int, seed: int) -> str | None:
        """Re-run a Selector's ``_select`` to say precisely how it broke the contract."""
        if not isinstance(self.selector, Selector):
            return None
        n = len(video.pool)
        try:
            raw = self.selector._select(video.pool, _QUERY, min(k, n), video.features, np.random.default_rng(seed))
        except Exception:
            return None
        indices, _ = read_output(raw, self.selector.name)
        return contract_problem(list(indices), k, n, exact=self.exact)

    def check(self, case: str, video: SyntheticVideo, k: int, seed: int = 0) -> Selection:
        before = _snapshot(video)
        selection = self.select(case, video, k, seed)
        problem = contract_problem(selection.indices, k, len(video.pool), exact=self.exact)
        if problem:
            raise self.fail(case, f"k={k}, N={len(video.pool)}, seed={seed}: {problem}")
        changed = _changed(before, video)
        if changed:
            raise self.fail(case, f"select modified its input: {', '.join(changed)}")
        return selection

    def expect_error(self, case: str, video: SyntheticVideo, k: int, what: str) -> None:
        try:
            out = self.selector.select(video.pool, _QUERY, k, video.features, seed=0)
        except SelectionError as exc:
            if not str(exc).strip():
                raise self.fail(case, f"SelectionError for {what} has an empty message") from exc
            return
        except Exception as exc:
            raise self.fail(case, f"{what} raised {type(exc).__name__} ({exc}); expected frameselect.errors.SelectionError") from exc
        indices = list(getattr(out, "indices", out))
        raise self.fail(case, f"{what} was accepted (returned {indices[:10]}); expected frameselect.errors.SelectionError")


def _snapshot(video: SyntheticVideo) -> dict[str, NDArray[Any] | None]:
    snap: dict[str, NDArray[Any] | None] = {
        "pool.timestamps": np.array(video.pool.timestamps, copy=True),
        "pool.frame_indices": np.array(video.pool.frame_indices, copy=True),
    }
    for name in ("embeddings", "text", "scores", "pixels"):
        value = getattr(video.features, name)
        snap[f"features.{name}"] = None if value is None else np.array(value, copy=True)
    return snap


def _changed(before: Mapping[str, NDArray[Any] | None], video: SyntheticVideo) -> list[str]:
    after = _snapshot(video)
    out = []
    for key, old in before.items():
        new = after[key]
        if (old is None) != (new is None) or (old is not None and new is not None and (old.shape != new.shape or not np.array_equal(old, new, equal_nan=True))):
            out.append(key)
    return out


def _with(video: SyntheticVideo, **arrays: Any) -> SyntheticVideo:
    """The same video with some feature arrays replaced."""
    f = video.features
    values = {name: getattr(f, name) for name in ("embeddings", "text", "scores", "pixels")}
    values.update(arrays)
    return SyntheticVideo(video.pool, Features(encoder_id=f.encoder_id, **values))


def _poisoned(array: NDArray[Any] | None) -> Iterator[tuple[str, NDArray[np.float64]]]:
    """Copies of ``array`` (a feature the case computed) with one NaN, one +inf and one -inf."""
    if array is None:
        raise AssertionError("the case computed no such feature to poison")
    for label, value in (("NaN", np.nan), ("+inf", np.inf), ("-inf", -np.inf)):
        bad = np.array(array, dtype=np.float64, copy=True)
        bad.flat[bad.size // 2] = value
        yield label, bad


# the checks, in order; each takes the checker and the base (n, k)


def _check_basic(c: _Checker, n: int, k: int) -> None:
    c.check("basic", c.video(n), k)
    c.check("larger pool", c.video(3 * n + 5), k + 3, seed=3)


def _check_determinism(c: _Checker, n: int, k: int) -> None:
    video = c.video(n)
    for seed in (0, 1, 12345):
        first = c.check("determinism", video, k, seed).indices
        again = c.check("determinism", video, k, seed).indices
        if first != again:
            raise c.fail(
                "determinism",
                f"seed={seed} gave {list(first)} then {list(again)}; a selector must be deterministic for a given seed (draw randomness only from the rng it is given)",
            )


def _check_budget_edges(c: _Checker, n: int, k: int) -> None:
    video = c.video(n)
    for kk in (1, n - 1, n, n + 5):
        selection = c.check(f"k={kk}, N={n}", video, kk)
        if kk >= n and not c.exact and list(selection.indices) != list(range(n)):
            raise c.fail(f"k={kk}, N={n}", f"k >= N must select every frame, got {list(selection.indices)}")
    for size in (1, 2):
        tiny = c.video(size)
        for kk in (1, 2, 5):
            c.check(f"N={size}, k={kk}", tiny, kk)


def _check_identical_frames(c: _Checker, n: int, k: int) -> None:
    video = c.video(n)
    f = video.features
    same: dict[str, Any] = {}
    if f.embeddings is not None:
        same["embeddings"] = np.repeat(f.embeddings[:1], n, axis=0)
    if f.scores is not None:
        same["scores"] = np.full(n, float(f.scores[0]))
    if f.pixels is not None:
        same["pixels"] = np.repeat(f.pixels[:1], n, axis=0)
    identical = _with(video, **same)
    for kk in (1, k, n):
        c.check("identical frames", identical, kk)


def _check_constant_relevance(c: _Checker, n: int, k: int) -> None:
    if "relevance" not in c.needs:
        return
    video = c.video(n)
    for value in (0.0, 0.37):
        c.check(f"constant scores {value}", _with(video, scores=np.full(n, value)), k)
    c.check("relevance from embeddings and text (no scores)", c.video(n, relevance_from="embeddings"), k)


def _check_non_finite(c: _Checker, n: int, k: int) -> None:
    reads_embeddings = "embeddings" in c.needs
    reads_text = "text" in c.needs
    if "relevance" in c.needs:
        video = c.video(n)
        for label, bad in _poisoned(video.features.scores):
            c.expect_error(f"{label} in scores", _with(video, scores=bad), k, f"a {label} relevance score")
        via_text = c.video(n, relevance_from="embeddings")
        for label, bad in _poisoned(via_text.features.embeddings):
            c.expect_error(f"{label} in embeddings (relevance from text)", _with(via_text, embeddings=bad), k, f"a {label} frame embedding")
        for label, bad in _poisoned(via_text.features.text):
            c.expect_error(f"{label} in text embedding", _with(via_text, text=bad), k, f"a {label} text embedding")
    if reads_embeddings:
        video = c.video(n)
        for label, bad in _poisoned(video.features.embeddings):
            c.expect_error(f"{label} in embeddings", _with(video, embeddings=bad), k, f"a {label} frame embedding")
    if reads_text:
        video = c.video(n)
        for label, bad in _poisoned(video.features.text):
            c.expect_error(f"{label} in text embedding", _with(video, text=bad), k, f"a {label} text embedding")


def _check_bad_budget(c: _Checker, n: int, k: int) -> None:
    video = c.video(n)
    for kk in (0, -1):
        c.expect_error(f"k={kk}", video, kk, f"budget k={kk}")


CHECKS: dict[str, Callable[[_Checker, int, int], None]] = {
    "basic": _check_basic,
    "determinism": _check_determinism,
    "budget_edges": _check_budget_edges,
    "identical_frames": _check_identical_frames,
    "constant_relevance": _check_constant_relevance,
    "non_finite": _check_non_finite,
    "bad_budget": _check_bad_budget,
}


def _resolve(selector_or_name: Any, params: Mapping[str, Any] | None) -> tuple[Any, str]:
    params = dict(params or {})
    if isinstance(selector_or_name, str):
        from frameselect.registry import selectors

        return selectors.create(selector_or_name, **params), repr(selector_or_name)
    if inspect.isclass(selector_or_name):
        return selector_or_name(**params), selector_or_name.__name__
    if params:
        raise TypeError(f"params {sorted(params)} given with a selector instance; pass them to its constructor")
    return selector_or_name, label_of(selector_or_name)


def _checker(selector: Any, label: str, dim: int, pixel_shape: tuple[int, int]) -> _Checker:
    """The checker for one selector, after checking what it declares."""
    if isinstance(selector, Selector):
        needs, exact = selector.needs, selector.reference_exact
        if selector.supports_reference_exact != ("reference_exact" in parameter_names(selector)):
            raise AssertionError(
                f"check_selector({label}) [declarations]: supports_reference_exact={selector.supports_reference_exact} "
                "but the selector does not have exactly that: declare it with a reference_exact field, or neither"
            )
    else:  # a third-party selector that keeps the protocol without subclassing Selector
        needs, exact = frozenset(getattr(selector, "needs", frozenset())), bool(getattr(selector, "reference_exact", False))
    unknown = set(needs) - FEATURE_KINDS
    if unknown:
        raise AssertionError(f"check_selector({label}) [declarations]: needs declares unknown feature kinds {sorted(unknown)}; known: {sorted(FEATURE_KINDS)}")
    if not callable(getattr(selector, "select", None)):
        raise AssertionError(f"check_selector({label}) [declarations]: {type(selector).__name__} has no select(pool, query, k, features, *, seed) method")
    return _Checker(selector, label, exact, frozenset(needs), dim, pixel_shape)


def selector_checks(*, n: int = 10, k: int = 4, dim: int = 16, pixel_shape: tuple[int, int] = (9, 16)) -> list[Check]:
    """The selector suite, one :class:`Check` per property; ``n`` and ``k`` size the base case."""
    if n < 4 or not 2 <= k < n:
        raise ValueError(f"the selector checks need n >= 4 and 2 <= k < n, got n={n}, k={k}")

    def make(fn: Callable[[_Checker, int, int], None]) -> Callable[[Any], None]:
        return lambda selector: fn(_checker(selector, label_of(selector), dim, pixel_shape), n, k)

    def declarations(selector: Any) -> None:
        _checker(selector, label_of(selector), dim, pixel_shape)

    checks = [Check("selectors", "declarations", declarations)]
    checks += [Check("selectors", name, make(fn)) for name, fn in CHECKS.items()]
    return [*checks, check_config_round_trip("check_selector")]


def check_selector(
    selector_or_name: Any,
    *,
    params: Mapping[str, Any] | None = None,
    n: int = 12,
    k: int = 4,
    dim: int = 16,
    pixel_shape: tuple[int, int] = (9, 16),
) -> None:
    """Run the conformance suite on one selector; raise ``AssertionError`` on the first failure.

    ``selector_or_name``: a registered name (created with ``params``), a
    selector class (likewise) or an instance. ``n`` and ``k`` size the base
    case (the suite also tries other sizes); ``dim`` is the embedding size,
    ``pixel_shape`` the (h, w) of synthetic frames for pixel-based selectors.
    A registered selector must also survive the round trip through its
    stored configuration.

    >>> check_selector("uniform")
    """
    if n < 4 or not 2 <= k < n:
        raise ValueError(f"check_selector needs n >= 4 and 2 <= k < n, got n={n}, k={k}")
    selector, label = _resolve(selector_or_name, params)
    checker = _checker(selector, label, dim, pixel_shape)
    for fn in CHECKS.values():
        fn(checker, n, k)
    if isinstance(selector, Selector) and registered_name_of(type(selector)):
        check_config_round_trip("check_selector")(selector)
