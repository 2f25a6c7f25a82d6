"""Bring your own features: run any selector on arrays you computed elsewhere.

No video, no encoder: hand over per-frame embeddings, a query embedding,
per-frame relevance scores, timestamps and/or downscaled frames, and get the
chosen indices back::

    >>> import numpy as np
    >>> from frameselect.arrays import select_from_arrays
    >>> out = select_from_arrays("topk", 2, scores=np.array([0.1, 0.9, 0.4, 0.8]))
    >>> out["indices"], out["timestamps"]
    ([1, 3], [1.0, 3.0])

The same is on the command line as ``frameselect select`` (reading ``.npy``
files). Arrays are used as given: embeddings are not re-normalised (selectors
that use cosine similarity normalise for themselves; ``relevance`` is the
plain dot product ``embeddings @ text``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.parts import parameter_names, part_params
from frameselect.selectors.base import Selector
from frameselect.types import CandidatePool, Features

__all__ = ["select_from_arrays", "pool_size", "selector_params"]


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
    pool = CandidatePool.from_timestamps(ts, video_id="byof")
    features = Features(embeddings=emb, text=txt, scores=sc, pixels=px, encoder_id="byof")
    selection = sel.select(pool, None, k, features, seed=seed)
    return {
        "selector": getattr(sel, "name", type(sel).__name__),
        "k": int(k),
        "indices": [int(i) for i in selection.indices],
        "timestamps": [float(pool.timestamps[i]) for i in selection.indices],
        "params": selector_params(sel),
    }
