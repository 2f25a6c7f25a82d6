"""Bring your own features: run any selector on arrays you computed elsewhere.

No video, no encoder: hand over per-frame embeddings, a query embedding,
per-frame relevance scores, timestamps and/or downscaled frames, and get the
chosen indices back::

    >>> import numpy as np
    >>> from frameselect.arrays import select_from_arrays
    >>> out = select_from_arrays("topk", 2, scores=np.array([0.1, 0.9, 0.4, 0.8]))
    >>> out["indices"], out["timestamps"]
    ([1, 3], [1.0, 3.0])

A question over several videos gives one set of arrays per video to
:func:`select_across`, which shares a total budget among them under a budget
policy, or lets a joint selector choose over all of them (docs/crossvideo.md)::

    >>> from frameselect.arrays import select_across
    >>> out = select_across("uniform", 6, [{"timestamps": np.arange(10.0)}, {"timestamps": np.arange(20.0)}])
    >>> [(v["id"], v["indices"]) for v in out["videos"]]
    [('video_1', [0, 4, 9]), ('video_2', [0, 9, 19])]

The same is on the command line as ``frameselect select`` (reading ``.npy``
files; the per-video flags repeated once per video). Arrays are used as
given: embeddings are not re-normalised (selectors that use cosine
similarity normalise for themselves; ``relevance`` is the plain dot product
``embeddings @ text``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError, UnknownNameError
from frameselect.parts import check_params, parameter_names, part_params
from frameselect.selectors.base import Selector, check_budget
from frameselect.types import CandidatePool, Features, Query, Sample, VideoRef

__all__ = ["select_from_arrays", "select_across", "pool_size", "selector_params", "PER_VIDEO_INPUTS"]

#: what :func:`select_across` takes for each video (``text``, the query, is one for all)
PER_VIDEO_INPUTS = ("embeddings", "scores", "timestamps", "pixels", "duration")


def _as_array(name: str, value: Any, ndim: int | tuple[int, ...]) -> NDArray[Any]:
    try:
        array = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise SelectionError(f"{name} is not an array: {exc}") from exc
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if array.ndim not in dims:
        want = " or ".join(f"{d}-D" for d in dims)
        raise SelectionError(f"{name} must be {want}, got shape {array.shape}")
    if array.dtype.kind not in "biuf":
        raise SelectionError(f"{name} must hold numbers, got dtype {array.dtype}")
    return array


def pool_size(
    *,
    embeddings: NDArray[Any] | None = None,
    scores: NDArray[Any] | None = None,
    timestamps: NDArray[Any] | None = None,
    pixels: NDArray[Any] | None = None,
) -> int:
    """The number of candidate frames N, which every per-frame array must agree on."""
    sizes = {
        name: int(a.shape[0]) for name, a in (("embeddings", embeddings), ("scores", scores), ("timestamps", timestamps), ("pixels", pixels)) if a is not None
    }
    if not sizes:
        raise SelectionError("no per-frame array given: pass embeddings, scores, timestamps or pixels so the number of candidate frames is known")
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{name} has {n}" for name, n in sizes.items())
        raise SelectionError(f"per-frame arrays disagree on the number of frames: {listed}")
    n = next(iter(sizes.values()))
    if n == 0:
        raise SelectionError("the per-frame arrays are empty: there are no candidate frames to select from")
    return n


def selector_params(selector: Any) -> dict[str, Any]:
    """A selector's hyper-parameters as plain JSON values (see :func:`frameselect.parts.part_params`)."""
    return part_params(selector)


def _create(selector: str | Selector, params: Mapping[str, Any]) -> Any:
    if not isinstance(selector, str):
        if params:
            raise SelectionError(f"parameters {sorted(params)} given with a selector instance; pass them to its constructor instead")
        return selector
    from frameselect.registry import selectors

    factory = selectors.get(selector)  # an unknown name raises UnknownNameError listing the known ones
    if isinstance(factory, type):
        known = parameter_names(factory)
        unknown = sorted(set(params) - set(known))
        if unknown:
            have = ", ".join(known) if known else "none"
            raise SelectionError(f"selector {selector!r} has no parameter(s) {', '.join(unknown)}; its parameters: {have}")
    try:
        return factory(**params)
    except TypeError as exc:
        raise SelectionError(f"bad parameters for selector {selector!r}: {exc}") from exc


def _pool_and_features(
    *,
    embeddings: Any = None,
    text: Any = None,
    scores: Any = None,
    timestamps: Any = None,
    pixels: Any = None,
    video_id: str = "byof",
    duration: float | None = None,
) -> tuple[CandidatePool, Features]:
    """One video's arrays, checked, as the candidate pool and features a selector reads."""
    emb = None if embeddings is None else _as_array("embeddings", embeddings, 2)
    txt = None if text is None else _as_array("text", text, (1, 2))
    sc = None if scores is None else _as_array("scores", scores, 1)
    ts = None if timestamps is None else _as_array("timestamps", timestamps, 1)
    px = None if pixels is None else _as_array("pixels", pixels, 4)
    n = pool_size(embeddings=emb, scores=sc, timestamps=ts, pixels=px)
    if txt is not None:
        if txt.ndim == 2:
            if txt.shape[0] != 1:
                raise SelectionError(f"text must be one query embedding, shape (D,) or (1, D), got {txt.shape}")
            txt = txt[0]
        if emb is not None and txt.shape[0] != emb.shape[1]:
            raise SelectionError(f"text embedding has dimension {txt.shape[0]} but frame embeddings have {emb.shape[1]}; they must live in the same space")
    if px is not None:
        if px.shape[-1] != 3:
            raise SelectionError(f"pixels must be RGB frames (N, h, w, 3), got shape {px.shape}")
        if px.dtype != np.uint8:
            raise SelectionError(f"pixels must be uint8, got dtype {px.dtype}")
    if ts is None:
        ts = np.arange(n, dtype=np.float64)
    elif not np.all(np.isfinite(ts)) or np.any(np.diff(ts) < 0):
        raise SelectionError("timestamps must be finite and ascending (seconds, one per frame)")
    pool = CandidatePool.from_timestamps(ts, video_id=video_id)
    if duration is not None:
        pool = dataclasses.replace(pool, duration=duration)
    return pool, Features(embeddings=emb, text=txt, scores=sc, pixels=px, encoder_id="byof")


def select_from_arrays(
    selector: str | Selector,
    k: int,
    /,
    *,
    embeddings: NDArray[Any] | None = None,
    text: NDArray[Any] | None = None,
    scores: NDArray[Any] | None = None,
    timestamps: NDArray[Any] | None = None,
    pixels: NDArray[Any] | None = None,
    seed: int = 0,
    **params: Any,
) -> dict[str, Any]:
    """Select ``k`` frames with ``selector`` (a registered name or an instance) from arrays.

    ``embeddings`` (N, D), ``text`` (D,) or (1, D), ``scores`` (N,),
    ``timestamps`` (N,) seconds, ascending (default: ``0, 1, ..., N-1``, one
    frame per second), ``pixels`` (N, h, w, 3) uint8. ``params`` are the
    selector's hyper-parameters. Returns ``{"selector", "k", "indices",
    "timestamps", "params"}`` with plain Python values (JSON-ready);
    ``params`` lists every hyper-parameter, defaults included.
    Raises :class:`~frameselect.errors.SelectionError` for arrays of the
    wrong shape or disagreeing sizes, and
    :class:`~frameselect.errors.UnknownNameError` for an unknown selector.
    """
    sel = _create(selector, params)
    pool, features = _pool_and_features(embeddings=embeddings, text=text, scores=scores, timestamps=timestamps, pixels=pixels)
    selection = sel.select(pool, None, k, features, seed=seed)
    return {
        "selector": getattr(sel, "name", type(sel).__name__),
        "k": int(k),
        "indices": [int(i) for i in selection.indices],
        "timestamps": [float(pool.timestamps[i]) for i in selection.indices],
        "params": selector_params(sel),
    }


def _across_selector(selector: Any, params: Mapping[str, Any]) -> Any:
    """A joint selector (by name or instance), else a single-video selector as :func:`select_from_arrays` makes it; ``holmes`` refused."""
    from frameselect.crossvideo import JointSelector, joint_selectors

    def refused(name: str) -> SelectionError:
        return SelectionError(
            f"joint selector {name!r} reads its answer out through an answerer, and selecting from arrays has none: "
            "run it with 'frameselect run' (Python: frameselect.evaluate) and an answerer"
        )

    if isinstance(selector, JointSelector):
        if selector.drives_answerer:
            raise refused(selector.name)
        if params:
            raise SelectionError(f"parameters {sorted(params)} given with a selector instance; pass them to its constructor instead")
        return selector
    if not (isinstance(selector, str) and selector in joint_selectors.names()):
        try:
            return _create(selector, params)
        except UnknownNameError as exc:
            raise UnknownNameError(f"{exc} (joint selectors over several videos: {', '.join(joint_selectors.names())})") from None
    factory = joint_selectors.get(selector)
    if getattr(factory, "drives_answerer", False):
        raise refused(selector)
    known = parameter_names(factory)
    unknown = sorted(set(params) - set(known))
    if unknown:
        have = ", ".join(known) if known else "none"
        raise SelectionError(f"joint selector {selector!r} has no parameter(s) {', '.join(unknown)}; its parameters: {have}")
    problems = check_params(factory, params)
    if problems:
        raise SelectionError(f"joint selector {selector!r}: {'; '.join(problems)}")
    try:
        return factory(**params)
    except (TypeError, ValueError) as exc:
        raise SelectionError(f"bad parameters for joint selector {selector!r}: {exc}") from exc


def _budget_policy(policy: Any) -> Any:
    from frameselect.crossvideo import BudgetPolicy, budget_policies

    if isinstance(policy, BudgetPolicy):
        return policy
    if isinstance(policy, str):
        if policy not in budget_policies.names():
            raise SelectionError(f"unknown budget policy {policy!r}; known: {', '.join(budget_policies.names())}")
        return budget_policies.create(policy)
    raise SelectionError(f"budget_policy must be a policy name or a BudgetPolicy, got {type(policy).__name__}")


def _video_ids(videos: Any, ids: Sequence[str] | None) -> tuple[list[str], list[Mapping[str, Any]]]:
    if isinstance(videos, Mapping):
        if ids is not None:
            raise SelectionError("videos given as a mapping are named by its keys; give no ids")
        names, inputs = [*videos.keys()], [*videos.values()]
    elif isinstance(videos, Sequence) and not isinstance(videos, (str, bytes)):
        inputs = list(videos)
        names = [f"video_{i}" for i in range(1, len(inputs) + 1)] if ids is None else list(ids)
        if len(names) != len(inputs):
            raise SelectionError(f"{len(names)} video ids given for {len(inputs)} videos; give one id per video, in order")
    else:
        raise SelectionError(f"videos must be a list of per-video inputs (one mapping per video), got {type(videos).__name__}")
    if not inputs:
        raise SelectionError("no video given: pass one mapping of arrays per video")
    for name in names:
        if not isinstance(name, str) or not name or name != name.strip():
            raise SelectionError(f"a video id must be a non-empty string without surrounding spaces, got {name!r}")
    if len(set(names)) != len(names):
        raise SelectionError(f"video ids must be unique, got {names}")
    for name, given in zip(names, inputs):
        if not isinstance(given, Mapping):
            raise SelectionError(f"video {name!r}: its inputs must be a mapping such as {{'scores': array}}, got {type(given).__name__}")
        if "text" in given:
            raise SelectionError(f"video {name!r}: the query embedding is one for all videos; pass text= once, not per video")
        unknown = sorted(set(given) - set(PER_VIDEO_INPUTS))
        if unknown:
            raise SelectionError(f"video {name!r}: unknown input(s) {', '.join(map(str, unknown))}; per-video inputs: {', '.join(PER_VIDEO_INPUTS)}")
    return names, inputs


def _duration(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not np.isfinite(value) or value <= 0:
        raise SelectionError(f"video {name!r}: duration must be a positive number of seconds, got {value!r}")
    return float(value)


def select_across(
    selector: str | Selector | Any,
    k: int,
    videos: Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]],
    /,
    *,
    text: NDArray[Any] | None = None,
    budget_policy: Any = None,
    ids: Sequence[str] | None = None,
    seed: int = 0,
    **params: Any,
) -> dict[str, Any]:
    """Select ``k`` frames in all over several videos, from arrays: the cross-video selection of a run.

    ``videos``: one mapping per video, in order, of ``embeddings`` (N, D),
    ``scores`` (N,), ``timestamps`` (N,) seconds and ``pixels`` (N, h, w, 3),
    each as :func:`select_from_arrays` reads it, and an optional ``duration``
    (seconds; the ``duration`` policy's weight, default the span of the
    timestamps). Videos are ``video_1``, ``video_2``, ... unless ``ids`` names
    them (or ``videos`` is a mapping from id to inputs). ``text`` is the one
    query embedding, (D,) or (1, D), for every video.

    ``selector`` is a single-video selector (name or instance, its
    hyper-parameters in ``params``), run in each video under the share the
    ``budget_policy`` (name or :class:`~frameselect.crossvideo.BudgetPolicy`;
    default ``equal``) gives it, or a joint selector (``topk_union``,
    ``binding``), which chooses over all videos itself (then no policy).
    ``holmes`` is refused: it answers through an answerer (``frameselect
    run``). The selection is :func:`frameselect.crossvideo.select_across_videos`,
    what a run calls, with per-video seeds from ``seed`` and each video's id.

    Returns ``{"selector", "k", "policy", "params", "videos": [{"id", "k",
    "indices", "timestamps", "scores"?}, ...]}`` (JSON-ready; ``k`` is the
    total, each video's ``k`` its share, ``scores`` only where the selector
    gives them), plus ``"policy_params"`` under a budget policy and
    ``"bindings"`` (``[video_a, index_a, video_b, index_b]`` lists) for a
    joint selector; ``policy`` is ``"joint"`` for a joint selector.
    """
    from frameselect.crossvideo import JointSelector, select_across_videos

    sel = _across_selector(selector, params)
    joint = isinstance(sel, JointSelector)
    if joint and budget_policy is not None:
        raise SelectionError(f"joint selector {sel.name!r} shares the budget among the videos itself; give no budget policy")
    policy: Any = None if joint else _budget_policy("equal" if budget_policy is None else budget_policy)
    total = check_budget(k)
    names, inputs = _video_ids(videos, ids)
    pools: dict[str, CandidatePool] = {}
    features: dict[str, Features] = {}
    for name, given in zip(names, inputs):
        arrays = {key: value for key, value in given.items() if key != "duration"}
        duration = _duration(name, given.get("duration"))
        try:
            pools[name], features[name] = _pool_and_features(**arrays, text=text, video_id=name, duration=duration)
        except SelectionError as exc:
            raise SelectionError(f"video {name!r}: {exc}") from None
    needs = set(sel.needs) if joint else set(policy.needs)
    who = f"joint selector {sel.name!r}" if joint else f"budget policy {policy.name!r}"
    for name in names:
        f = features[name]
        if "relevance" in needs and f.scores is None and (f.embeddings is None or f.text is None):
            raise SelectionError(
                f"{who} needs query relevance in every video: give scores for each video, or embeddings for each and the text; none for {name!r}"
            )
        if "embeddings" in needs and f.embeddings is None:
            raise SelectionError(f"{who} needs frame embeddings in every video; none for {name!r}")
    # no question text: a selector sees query=None, as select_from_arrays gives it
    refs = [VideoRef(name, name) for name in names]
    sample = Sample(id="arrays", video=refs[0].path, query=cast(Query, None), videos=tuple(refs))
    if joint:
        multi = select_across_videos(sample, pools, features, total, selector=sel, seed=seed)
        shares = multi.shares
    else:
        shares = policy.shares(sample, pools, total, features)
        multi = select_across_videos(sample, pools, features, total, selector=sel, policy=policy, seed=seed, shares=shares)
    out: dict[str, Any] = {
        "selector": getattr(sel, "name", type(sel).__name__),
        "k": total,
        "policy": multi.policy,
        "params": selector_params(sel),
    }
    if policy is not None:
        out["policy_params"] = part_params(policy)
    listed = []
    for name in names:
        chosen = multi.by_video[name]
        entry: dict[str, Any] = {
            "id": name,
            "k": int(shares[name]),
            "indices": [int(i) for i in chosen.indices],
            "timestamps": chosen.timestamps(pools[name]),
        }
        if chosen.scores is not None:
            entry["scores"] = [float(x) for x in chosen.scores]
        listed.append(entry)
    out["videos"] = listed
    if joint:
        out["bindings"] = [[a, int(i), b, int(j)] for a, i, b, j in multi.bindings]
    return out
