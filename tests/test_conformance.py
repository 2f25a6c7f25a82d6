"""Every registered part passes the public conformance suite of its kind; each suite catches broken parts.

One test per (part, check), as scikit-learn's ``parametrize_with_checks``;
the parts come from the registries, so a new part is checked the day it is
registered (dataset loaders: tests/datasets/test_loaders.py, on examples of
their files). Each check is also run on parts broken in the way it guards
against, and must fail on them.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import frameselect
from frameselect.answerers.base import Answerer, AnswerRequest
from frameselect.encoders.base import Encoder
from frameselect.evaluators.base import Evaluator
from frameselect.registry import selectors
from frameselect.routing.base import Route, RouteContext, Router, RouteSet
from frameselect.selectors.base import Selector
from frameselect.testing import (
    PartCase,
    check_answerer,
    check_encoder,
    check_evaluator,
    check_router,
    check_selector,
    checks_for,
    contract_problem,
    parametrize_with_checks,
    registry_cases,
    synthetic_features,
    synthetic_pool,
)
from frameselect.types import Answer, CandidatePool, Features, Query, Sample, Selection

sys.path.append(str(Path(__file__).parent))  # for part_examples.py (tests have no __init__.py)
import part_examples  # noqa: E402, F401  (registers the examples of parts that need models or a server)

# -- every registered part, one test per check ------------------------------------------------


#: selectors that rank frames through the answering model (``needs_answerer``) need a model and the pool's decoded frames,
#: which the synthetic pools do not have: their contract is checked on a tiny model in tests/hub/test_flexselect.py
_THROUGH_ANSWERER = [n for n in selectors.names() if selectors.get(n).needs_answerer]  # type: ignore[attr-defined]


@parametrize_with_checks(registry_cases("selectors", [n for n in selectors.names() if n not in _THROUGH_ANSWERER]))
def test_selector_conforms(part: Any, check: Any) -> None:
    check(part)


def _exact(name: str) -> PartCase:
    return PartCase("selectors", f"{name}(reference_exact=True)", lambda _: selectors.create(name, reference_exact=True))


@parametrize_with_checks([_exact(n) for n in selectors.names() if selectors.get(n).supports_reference_exact])  # type: ignore[attr-defined]
def test_reference_exact_variant_conforms(part: Any, check: Any) -> None:
    """With reference_exact=True a selector may break count/uniqueness, but nothing else."""
    check(part)


@parametrize_with_checks(registry_cases("evaluators"))
def test_evaluator_conforms(part: Any, check: Any) -> None:
    check(part)


@parametrize_with_checks(registry_cases("encoders"))
def test_encoder_conforms(part: Any, check: Any) -> None:
    check(part)


@parametrize_with_checks(registry_cases("answerers"))
def test_answerer_conforms(part: Any, check: Any) -> None:
    check(part)


@parametrize_with_checks(registry_cases("routers"))
def test_router_conforms(part: Any, check: Any) -> None:
    check(part)


def test_every_kind_is_covered_by_the_registry() -> None:
    """The suites above and the loader suite take every registered part: no hand-kept list."""
    for kind in ("selectors", "evaluators", "encoders", "answerers", "routers", "datasets"):
        registry = frameselect.get_registry(kind)
        assert [c.label for c in registry_cases(kind)] == registry.names()
        assert {registry.get(n).kind for n in registry.names()} == {kind}  # each part declares the kind it is registered as
    assert {"openai_http", "qwen2_vl", "llava_onevision", "internvl"} <= {n for k, n in frameselect.testing.EXAMPLES if k == "answerers"}


def test_parametrize_with_checks_gives_one_readable_id_per_check() -> None:
    mark = parametrize_with_checks([selectors.create("uniform"), frameselect.evaluators.create("evidence_recall")])
    names, pairs = mark.args
    ids = mark.kwargs["ids"]
    assert names == ("part", "check") and len(pairs) == len(ids)
    assert ids[:3] == ["uniform-declarations", "uniform-basic", "uniform-determinism"]
    assert "uniform-round_trip" in ids and "evidence_recall-score" in ids and "evidence_recall-round_trip" in ids
    assert [c.name for c in checks_for(selectors.create("uniform"))][-1] == "round_trip"


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
    supports_reference_exact: ClassVar[bool] = True

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


def test_supports_reference_exact_must_match_the_field() -> None:
    @dataclass(frozen=True)
    class Undeclared(Selector):
        reference_exact: bool = False

        def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
            return list(range(k))

    with pytest.raises(AssertionError, match=r"\[declarations\]: supports_reference_exact=False"):
        check_selector(Undeclared())


# -- the round trip, on a part of every kind that does not keep its configuration --------------------


@dataclass(frozen=True)
class _Doubles(Selector):
    """Stores twice the budget fraction it is given: reviving it doubles again."""

    fraction: float = 0.25

    def __post_init__(self) -> None:
        object.__setattr__(self, "fraction", self.fraction * 2)

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> list[int]:
        return list(range(k))


class _RenamesItsParameter(Evaluator):
    """Takes ``threshold`` but keeps it as ``self.t``: its configuration cannot be read."""

    def __init__(self, threshold: float = 0.5) -> None:
        self.t = threshold

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.name: 1.0}


class _RoundsOff(Router):
    """Keeps its split nudged: ``split=0.37`` is stored as 0.38, revived as 0.39."""

    def __init__(self, split: float = 0.37) -> None:
        self.split = split + 0.01

    def allocate(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext], mean_budget: int, bank: Sequence[Selector]) -> RouteSet:
        return RouteSet({s.id: Route(s.id, mean_budget, bank[0]) for s in samples})


@pytest.mark.parametrize(
    ("kind", "part", "message"),
    [
        ("selectors", _Doubles(), r"check_selector\(broken_doubles\) \[round trip\]: the revived part has another fingerprint"),
        ("evaluators", _RenamesItsParameter(), r"\[round trip\]: its configuration cannot be read: .*'threshold' is not kept as an attribute"),
        ("routers", _RoundsOff(), r"check_router\(broken_rounds_off\) \[round trip\]: the revived part has another fingerprint"),
    ],
    ids=["selector", "evaluator", "router"],
)
def test_round_trip_catches_parts_that_do_not_keep_their_configuration(kind: str, part: Any, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = frameselect.get_registry(kind)
    name = f"broken_{re.sub(r'(?<!^)(?=[A-Z])', '_', type(part).__name__.strip('_')).lower()}"
    monkeypatch.setitem(registry._entries, name, type(part))
    monkeypatch.setattr(type(part), "registered_name", name)
    (check,) = [c for c in checks_for(part) if c.name == "round_trip"]
    with pytest.raises(AssertionError, match=message):
        check(part)


def test_round_trip_of_an_injected_model_says_it_cannot_be_revived() -> None:
    from frameselect.errors import PartConfigError
    from frameselect.parts import part_config
    from frameselect.registry import revive

    class Weights:  # stands in for a model object
        pass

    enc = _InjectedEncoder(model=Weights())
    config = part_config(enc)
    assert config["params"]["model"] == {"__object__": f"{__name__}.test_round_trip_of_an_injected_model_says_it_cannot_be_revived.<locals>.Weights"}
    with pytest.raises(PartConfigError, match=r"encoder 'injected' was given live objects \(params.model"):
        revive(config)
    (check,) = [c for c in checks_for(enc) if c.name == "round_trip"]
    check(enc)  # the check accepts a part that says so


@frameselect.encoders.register("injected")
class _InjectedEncoder(Encoder):
    def __init__(self, model: Any = None) -> None:
        self.model = model

    def encode_frames(self, frames: Any) -> Any:
        return np.ones((len(frames), 2), dtype=np.float32) / math.sqrt(2)


# -- deliberately broken evaluators ---------------------------------------------------------------------


class _Undeclared(Evaluator):
    """Writes a key it does not declare."""

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.name: 1.0, "bonus": 2.0}


class _Infinite(Evaluator):
    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.name: math.inf}


class _Raises(Evaluator):
    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.name: 1.0 / len(sample.metadata["scenes"])}


_draws = itertools.count()


class _Drifts(Evaluator):
    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.name: float(next(_draws))}


class _BadAggregate(Evaluator):
    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.name: 1.0}

    def aggregate(self, records: Sequence[Any]) -> dict[str, float]:
        return {"total": float(len(records))}


class _EmptyAggregateFails(Evaluator):
    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.name: 1.0}

    def aggregate(self, records: Sequence[Any]) -> dict[str, float]:
        return {self.name: sum(r.metrics[self.name] for r in records) / len(records)}


class _NeedsAudio(Evaluator):
    needs = frozenset({"audio"})

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {self.name: 1.0}


@pytest.mark.parametrize(
    ("evaluator", "message"),
    [
        (_Undeclared(), r"\[score\]: sample 0: score wrote \['bonus'\], which score_keys \['_Undeclared'\] does not declare"),
        (_Infinite(), r"\[score\]: sample 0: _Infinite=inf is not a finite number or NaN"),
        (_Raises(), r"\[score\]: sample 0: score raised KeyError"),
        (_Drifts(), r"\[determinism\]: the same inputs scored"),
        (_BadAggregate(), r"\[aggregate\]: aggregate wrote \['total'\], which metrics \['_BadAggregate'\] does not declare"),
        (_EmptyAggregateFails(), r"\[aggregate of no records\]: aggregate raised ZeroDivisionError"),
        (_NeedsAudio(), r"\[declarations\]: needs declares \['audio'\]"),
    ],
    ids=["undeclared_key", "infinite", "raises", "drifts", "bad_aggregate", "empty_aggregate", "needs_audio"],
)
def test_check_evaluator_catches_broken_evaluators(evaluator: Evaluator, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_evaluator(evaluator)


# -- deliberately broken encoders -------------------------------------------------------------------------


class _Base(Encoder):
    """A correct tiny encoder: mean colour, normalised; text by letter counts."""

    has_text = True

    def encode_frames(self, frames: Any) -> Any:
        x = np.asarray(frames, dtype=np.float32).mean(axis=(1, 2)) + 1.0
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    def encode_text(self, texts: Any) -> Any:
        x = np.array([[t.count("a") + 1, t.count("e") + 1, t.count("o") + 1] for t in texts], dtype=np.float32)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class _WrongRows(_Base):
    def encode_frames(self, frames: Any) -> Any:
        return super().encode_frames(frames)[:1]


class _Float64(_Base):
    def encode_frames(self, frames: Any) -> Any:
        return super().encode_frames(frames).astype(np.float64)


class _Unnormalised(_Base):
    def encode_frames(self, frames: Any) -> Any:
        return super().encode_frames(frames) * 3.0


class _BatchDependent(_Base):
    def encode_frames(self, frames: Any) -> Any:
        x = np.asarray(frames, dtype=np.float32).mean(axis=(1, 2)) - np.asarray(frames, dtype=np.float32).mean() + 1000.0
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class _WritesFrames(_Base):
    def encode_frames(self, frames: Any) -> Any:
        frames[0, 0, 0] = 0
        return super().encode_frames(frames)


class _ClaimsText(_Base):
    def encode_text(self, texts: Any) -> Any:
        raise NotImplementedError("no text tower")


class _HidesText(_Base):
    has_text = False


class _WrongTextSize(_Base):
    def encode_text(self, texts: Any) -> Any:
        return np.ones((len(texts), 5), dtype=np.float32)


@pytest.mark.parametrize(
    ("encoder", "message"),
    [
        (_WrongRows(), r"\[frames\]: encode_frames of \(5, 36, 48, 3\) returned shape \(1, 3\)"),
        (_Float64(), r"\[frames\]: embeddings are float64, expected float32"),
        (_Unnormalised(), r"\[frames\]: normalized=True but the norms are \[3.0"),
        (_WritesFrames(), r"\[frames\]: encode_frames modified the frames"),
        (_BatchDependent(), r"\[batches\]: a frame's embedding depends on the other frames of its batch"),
        (_ClaimsText(), r"\[text\]: has_text=True but encode_text raised NotImplementedError"),
        (_HidesText(), r"\[text\]: has_text=False but encode_text returned embeddings"),
        (_WrongTextSize(), r"\[text\]: encode_text of 2 texts returned shape \(2, 5\), expected \(2, 3\)"),
    ],
    ids=["wrong_rows", "float64", "unnormalised", "writes_frames", "batch_dependent", "claims_text", "hides_text", "wrong_text_size"],
)
def test_check_encoder_catches_broken_encoders(encoder: Encoder, message: str) -> None:
    for check in checks_for(_Base())[:-1]:  # the unbroken one passes (the round trip needs a registered name)
        check(_Base())
    with pytest.raises(AssertionError, match=message):
        check_encoder(encoder)


# -- deliberately broken answerers ------------------------------------------------------------------------


class _Echo(Answerer):
    """A correct backend: answers the letter of the request's first option."""

    needs_frames = False

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        return [Answer(text="A", model="echo") for _ in requests]


class _OneShort(_Echo):
    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        return super().answer(requests)[1:]


class _RaisesInBatch(_Echo):
    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        raise TimeoutError("the server did not answer")


class _BatchSensitive(_Echo):
    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        return [Answer(text="AB"[len(requests) % 2], model="echo") for _ in requests]


class _EmptyError(_Echo):
    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        return [Answer(text="", model="echo", error="") for _ in requests]


class _ZeroConcurrency(_Echo):
    concurrency = 0


@pytest.mark.parametrize(
    ("answerer", "message"),
    [
        (_OneShort(), r"\[batch\]: answer returned 2 items \(\['Answer'\]\) for 3 requests"),
        (_RaisesInBatch(), r"\[batch\]: answer raised TimeoutError: the server did not answer; a backend returns Answer\(error=...\)"),
        (_BatchSensitive(), r"\[determinism\]: answers depend on the batch"),
        (_EmptyError(), r"\[batch\]: sample 'q0': error must be a non-empty message or None"),
        (_ZeroConcurrency(), r"\[declarations\]: concurrency must be a positive integer, got 0"),
    ],
    ids=["one_short", "raises", "batch_sensitive", "empty_error", "zero_concurrency"],
)
def test_check_answerer_catches_broken_answerers(answerer: Answerer, message: str) -> None:
    for check in checks_for(_Echo())[:-1]:  # the unbroken one passes (the round trip needs a registered name)
        check(_Echo())
    with pytest.raises(AssertionError, match=message):
        check_answerer(answerer)


# -- deliberately broken routers ------------------------------------------------------------------------------


class _Fixed(Router):
    """A correct router: every sample gets the mean budget and the first selector of the bank."""

    def allocate(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext], mean_budget: int, bank: Sequence[Selector]) -> RouteSet:
        return RouteSet({s.id: Route(s.id, mean_budget, bank[0]) for s in samples})


class _DropsUnprobed(_Fixed):
    def allocate(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext], mean_budget: int, bank: Sequence[Selector]) -> RouteSet:
        return super().allocate([s for s in samples if s.id in contexts], contexts, mean_budget, bank)


class _Overspends(_Fixed):
    def allocate(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext], mean_budget: int, bank: Sequence[Selector]) -> RouteSet:
        return RouteSet({s.id: Route(s.id, mean_budget + (i == 0), bank[0]) for i, s in enumerate(samples)})


class _ForeignSelector(_Fixed):
    def allocate(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext], mean_budget: int, bank: Sequence[Selector]) -> RouteSet:
        other = selectors.create("topk")
        return RouteSet({s.id: Route(s.id, mean_budget, other) for s in samples})


_flips = itertools.count()


class _Flips(_Fixed):
    def allocate(self, samples: Sequence[Sample], contexts: Mapping[str, RouteContext], mean_budget: int, bank: Sequence[Selector]) -> RouteSet:
        pick = bank[next(_flips) % len(bank)]
        return RouteSet({s.id: Route(s.id, mean_budget, pick) for s in samples})


class _NeedsAudioRouter(_Fixed):
    needs = frozenset({"audio"})


@pytest.mark.parametrize(
    ("router", "message"),
    [
        (_DropsUnprobed(), r"\[a sample without context\]: no route for samples \['q3'\]"),
        (_Overspends(), r"\[allocate at mean budget 4\]: mean budget 4.125 != 4"),
        (_ForeignSelector(), r"\[allocate at mean budget 4\]: sample 'q0' got selector .*which is not in the bank"),
        (_Flips(), r"\[determinism\]: the same samples were routed differently"),
        (_NeedsAudioRouter(), r"\[declarations\]: needs declares \['audio'\]"),
    ],
    ids=["drops_unprobed", "overspends", "foreign_selector", "flips", "needs_audio"],
)
def test_check_router_catches_broken_routers(router: Router, message: str) -> None:
    for check in checks_for(_Fixed())[:-1]:
        check(_Fixed())
    with pytest.raises(AssertionError, match=message):
        check_router(router)


# -- the README's example selector --------------------------------------------------------------------------


def _readme_selector() -> Any:
    blocks = re.findall(r"```python\n(.*?)```", (Path(__file__).resolve().parent.parent / "README.md").read_text(), flags=re.S)
    (code,) = [b for b in blocks if "class EveryOther(Selector)" in b]
    namespace: dict[str, Any] = {}
    exec(compile(code.replace('@register("every_other")', ""), "README.md", "exec"), namespace)
    return namespace["EveryOther"]


@pytest.mark.parametrize("k", range(2, 12))
def test_readme_example_selector_passes_the_suite_at_every_k(k: int) -> None:
    check_selector(_readme_selector(), n=12, k=k)
