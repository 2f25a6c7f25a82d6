"""What ``Selector._select`` returns is a declared type: indices (any sequence, a tuple included) or ``Scored``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from frameselect.errors import ContractError
from frameselect.selectors.base import Scored, Selector
from frameselect.types import CandidatePool, Features


@dataclass(frozen=True)
class _Fixed(Selector):
    """Returns ``out`` whatever it is asked (a test double: the output shape is what is tested)."""

    out: object = ()

    def _select(self, pool, query, k, features, rng):  # type: ignore[no-untyped-def]
        return self.out


POOL = CandidatePool.from_timestamps([0.0, 1.0, 2.0, 3.0], video_id="v")


def _select(out: object, k: int) -> tuple[tuple[int, ...], tuple[float, ...] | None]:
    sel = _Fixed(out=out).select(POOL, None, k, Features())
    return sel.indices, sel.scores


def test_indices_given_as_a_tuple_are_indices() -> None:
    """Two indices returned as a tuple were read as (indices, scores) before ``Scored`` was declared."""
    assert _select((1, 3), 2) == ((1, 3), None)
    assert _select((np.int64(0), np.int64(2)), 2) == ((0, 2), None)
    assert _select([0, 1, 3], 3) == ((0, 1, 3), None)


def test_scored_carries_the_scores() -> None:
    assert _select(Scored([0, 2], [0.5, 0.25]), 2) == ((0, 2), (0.5, 0.25))
    with pytest.raises(ContractError, match="2 indices but 1 scores"):
        Scored([0, 2], [0.5])


def test_the_old_pair_is_a_contract_error_naming_scored() -> None:
    with pytest.raises(ContractError, match=r"returned tuple holding something other than frame indices .*Scored\(indices, scores\)"):
        _select(([0, 2], [0.5, 0.25]), 2)
    with pytest.raises(ContractError, match="returned list holding something other than frame indices"):
        _select([0, "x"], 2)
