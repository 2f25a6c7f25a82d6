"""Every registered selector passes the public conformance suite; the suite catches broken ones."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from frameselect.registry import selectors
from frameselect.selectors.base import Selector
from frameselect.testing import check_selector, contract_problem, synthetic_features, synthetic_pool
from frameselect.types import CandidatePool, Features, Query, Selection


@pytest.mark.parametrize("name", selectors.names())
def test_registered_selector_conforms(name: str) -> None:
    check_selector(name, n=10, k=4)


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in selectors.names()
        if dataclasses.is_dataclass(selectors.get(n)) and any(f.name == "reference_exact" for f in dataclasses.fields(selectors.get(n)))
    ],
)
def test_reference_exact_variant_conforms(name: str) -> None:
    """With reference_exact=True a selector may break count/uniqueness, but nothing else."""
    check_selector(name, params={"reference_exact": True}, n=10, k=4)


# -- deliberately broken selectors -------------------------------------------


@dataclass(frozen=True)
class Duplicates(Selector):
    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return [0] * k


@dataclass(frozen=True)
class OneShort(Selector):
    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return list(range(k - 1)) if k > 1 else [0]


@dataclass(frozen=True)
class Descending(Selector):
    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return list(range(k))[::-1]


@dataclass(frozen=True)
class OutOfRange(Selector):
    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return [len(pool) - k + 1 + i for i in range(k)]


_calls = itertools.count()


@dataclass(frozen=True)
class Nondeterministic(Selector):
    """Ignores the rng it is given: draws from a hidden, advancing state."""

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        hidden = np.random.default_rng(next(_calls))
        return sorted(int(i) for i in hidden.choice(len(pool), size=k, replace=False))


@dataclass(frozen=True)
class FailsAtFullBudget(Selector):
    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        if k == len(pool):
            raise IndexError("index out of bounds")
        return list(range(k))


@dataclass(frozen=True)
class SwallowsNaN(Selector):
    """Declares embeddings but validates nothing (overrides select)."""

    needs = frozenset({"embeddings"})

    def select(self, pool: CandidatePool, query: Query | None, k: int, features: Features | None = None, *, seed: int = 0, rng: Any = None) -> Selection:
        if k < 1:
            from frameselect.errors import SelectionError

            raise SelectionError(f"k must be at least 1, got {k}")
        return Selection(indices=tuple(range(min(k, len(pool)))))


@dataclass(frozen=True)
class WrongErrorForBadBudget(Selector):
    def select(self, pool: CandidatePool, query: Query | None, k: int, features: Features | None = None, *, seed: int = 0, rng: Any = None) -> Selection:
        return Selection(indices=tuple(range(min(k, len(pool))))) if k >= 1 else Selection(indices=())


class Mutates(Selector):
    """Writes into the features it was handed (makes the array writeable first)."""

    needs = frozenset({"relevance"})

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        scores = features.scores
        if scores is not None:
            scores.setflags(write=True)
            scores[0] = 1e9
        return list(range(k))


@dataclass(frozen=True)
class ThirdPartyDuck:
    """Not a Selector subclass, returns duplicates from its own select."""

    needs = frozenset({"pixels"})

    def select(self, pool: CandidatePool, query: Query | None, k: int, features: Features | None = None, *, seed: int = 0) -> Selection:
        from frameselect.errors import SelectionError

        if k < 1:
            raise SelectionError("k < 1")
        return Selection(indices=tuple([0] * min(k, len(pool))))


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (Duplicates(), r"\[basic\].*duplicate indices \[0\]"),
        (OneShort(), r"\[basic\].*returned 3 indices, expected exactly min\(k, N\) = 4"),
        (Descending(), r"\[basic\].*indices are not ascending: \[3, 2, 1, 0\]"),
        (OutOfRange(), r"\[basic\].*out of range"),
        (Nondeterministic(), r"\[determinism\].*seed=0 gave"),
        (FailsAtFullBudget(), r"\[k=12, N=12\].*select raised IndexError: index out of bounds"),
        (SwallowsNaN(), r"\[NaN in embeddings\].*accepted.*expected frameselect.errors.SelectionError"),
        (WrongErrorForBadBudget(), r"\[k=0\].*budget k=0 was accepted"),
        (Mutates(), r"select modified its input: features.scores"),
        (ThirdPartyDuck(), r"check_selector\(ThirdPartyDuck\) \[basic\].*duplicate indices \[0\]"),
    ],
    ids=[
        "duplicates",
        "one_short",
        "descending",
        "out_of_range",
        "nondeterministic",
        "fails_at_full_budget",
        "swallows_nan",
        "wrong_error_for_bad_budget",
        "mutates",
        "third_party_duck",
    ],
)
def test_check_selector_catches_broken_selectors(selector: Any, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_selector(selector)


def test_check_selector_accepts_names_classes_and_instances() -> None:
    check_selector("uniform", params={"convention": "interior"})
    check_selector(selectors.get("random"))
    check_selector(selectors.create("kcenter", start="medoid"))


def test_unknown_needs_are_reported() -> None:
    @dataclass(frozen=True)
    class WantsAudio(Selector):
        needs = frozenset({"audio"})

    with pytest.raises(AssertionError, match="unknown feature kinds \\['audio'\\]"):
        check_selector(WantsAudio())


@dataclass(frozen=True)
class ExactDuplicates(Selector):
    """A reference-exact selector may return duplicates; it is still checked for the rest."""

    reference_exact: bool = True

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return [0] * k


def test_reference_exact_is_exempt_from_count_and_uniqueness_only() -> None:
    check_selector(ExactDuplicates())
    with pytest.raises(AssertionError, match="duplicate"):
        check_selector(ExactDuplicates(reference_exact=False))


def test_contract_problem_messages() -> None:
    assert contract_problem([0, 1, 2], 3, 3) is None
    assert contract_problem([0, 1, 2, 3], 9, 4) is None
    assert contract_problem([0, 1], 9, 4) == "returned 2 indices, expected exactly min(k, N) = 4 (k=9, N=4)"
    assert contract_problem([-1, 2], 2, 4) == "indices [-1] out of range for a pool of N=4 frames"
    assert contract_problem([1, 1], 2, 4, exact=True) is None


def test_synthetic_features_follow_needs() -> None:
    f = synthetic_features(frozenset({"relevance"}), 8)
    assert f.scores is not None and f.embeddings is None and f.text is None and f.pixels is None
    f = synthetic_features(frozenset({"relevance"}), 8, relevance_from="embeddings")
    assert f.scores is None and f.embeddings is not None and f.text is not None
    f = synthetic_features(frozenset({"embeddings", "pixels"}), 8, dim=5, pixel_shape=(4, 6))
    assert f.embeddings is not None and f.embeddings.shape == (8, 5)
    np.testing.assert_allclose(np.linalg.norm(f.embeddings, axis=1), 1.0, rtol=1e-6)
    assert f.pixels is not None and f.pixels.shape == (8, 4, 6, 3) and f.pixels.dtype == np.uint8
    ts = synthetic_pool(20).timestamps
    assert ts[0] == 0.0 and np.all(np.diff(ts) > 0)
