"""What the classical selectors share: unit rows of the embeddings, descending order with ties to the earlier frame, checks of their fractions."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from frameselect.errors import SelectionError
from frameselect.types import Features

__all__ = ["FloatArray"]


FloatArray = NDArray[np.float64]


def _descending(values: NDArray[np.floating] | FloatArray) -> NDArray[np.intp]:
    """Indices by descending value, the earlier index first on ties."""
    v = np.asarray(values, dtype=np.float64)
    return np.lexsort((np.arange(v.shape[0]), -v))


def _unit_rows(x: NDArray[np.floating]) -> NDArray[np.float32]:
    """Rows scaled to unit L2 norm, float32 (all-zero rows stay zero).

    Already-normalised input (the usual case) is returned without a copy.
    Similarities are products of these rows: float32 halves the memory
    traffic of the matrix-vector products that dominate the greedy loops.
    """
    return _unit_rows_and_norms(x)[0]


def _squared_norms(x32: NDArray[np.float32]) -> FloatArray:
    """Each row's squared L2 norm: the float32 entries' squares summed in float64."""
    sq: FloatArray = np.einsum("ij,ij->i", x32, x32, dtype=np.float64)
    return sq


def _unit_rows_and_norms(x: NDArray[np.floating]) -> tuple[NDArray[np.float32], FloatArray]:
    """:func:`_unit_rows`, and :func:`_squared_norms` of the rows it returns (computed once for already-normalised input)."""
    x32 = np.asarray(x, dtype=np.float32)
    sq = _squared_norms(x32)
    if np.all(np.abs(sq - 1.0) < 1e-5):
        return x32, sq
    norm = np.sqrt(sq).astype(np.float32)[:, None]
    out: NDArray[np.float32] = np.divide(x32, norm, out=np.zeros_like(x32), where=norm > 0)
    return out, _squared_norms(out)


def _embeddings(features: Features) -> NDArray[np.float32]:
    assert features.embeddings is not None  # guaranteed by Selector._check_features
    return _unit_rows(features.embeddings)


def _check_fraction(name: str, value: float, *, upper_open: bool = False) -> None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not (number and (0.0 <= value < 1.0 if upper_open else 0.0 <= value <= 1.0)):
        bound = "[0, 1)" if upper_open else "[0, 1]"
        raise SelectionError(f"{name} must be a number in {bound}, got {value!r}")
