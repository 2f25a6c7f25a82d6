"""Conformance suites any part can run on itself, built-in or third-party.

Like scikit-learn's ``check_estimator`` and ``parametrize_with_checks``::

    from frameselect.testing import check_selector, parametrize_with_checks, registry_cases

    check_selector("mmr")                  # a registered name
    check_selector(MySelector(alpha=0.3))  # an instance of your own

    @parametrize_with_checks([MySelector(), MyEvaluator()])
    def test_my_parts(part, check):       # one test per (part, check), ids "MySelector-basic"
        check(part)

There is one suite per kind that users extend: :func:`check_selector`,
:func:`check_evaluator`, :func:`check_dataset`, :func:`check_encoder`,
:func:`check_answerer`, :func:`check_router`, :func:`check_streaming`; :func:`check_param_ranges` says
whether every numeric parameter declares its range. Every suite ends with the round
trip: the part revived from its stored configuration has the same fingerprint.
:func:`registry_cases` gives every registered part of a kind as a lazily
built case, so a new part is checked the day it is registered; parts that
need files or models get them from a builder registered with
:func:`register_example` (a dataset without one is reported as a failure).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from frameselect.parts import Part
from frameselect.testing._core import (
    EXAMPLES,
    Check,
    PartCase,
    check_config_round_trip,
    check_param_ranges,
    example_for,
    label_of,
    register_example,
    registry_cases,
)
from frameselect.testing.kinds import (
    answerer_checks,
    check_answerer,
    check_dataset,
    check_encoder,
    check_evaluator,
    check_router,
    dataset_checks,
    encoder_checks,
    evaluator_checks,
    router_checks,
    synthetic_frames,
    synthetic_samples,
)
from frameselect.testing.selectors import SyntheticVideo, check_selector, contract_problem, selector_checks, synthetic_features, synthetic_pool
from frameselect.testing.streaming import check_streaming, streaming_checks, synthetic_stream

__all__ = [
    "Check",
    "EXAMPLES",
    "PartCase",
    "SyntheticVideo",
    "answerer_checks",
    "check_answerer",
    "check_config_round_trip",
    "check_param_ranges",
    "check_dataset",
    "check_encoder",
    "check_evaluator",
    "check_router",
    "check_selector",
    "check_streaming",
    "checks_for",
    "contract_problem",
    "dataset_checks",
    "encoder_checks",
    "evaluator_checks",
    "example_for",
    "parametrize_with_checks",
    "register_example",
    "registry_cases",
    "router_checks",
    "selector_checks",
    "streaming_checks",
    "synthetic_features",
    "synthetic_frames",
    "synthetic_pool",
    "synthetic_samples",
    "synthetic_stream",
]

_SUITES = {
    "selectors": selector_checks,
    "evaluators": evaluator_checks,
    "datasets": dataset_checks,
    "encoders": encoder_checks,
    "answerers": answerer_checks,
    "routers": router_checks,
    "streaming": streaming_checks,
}


def _kind_of(part: Any) -> str:
    if isinstance(part, PartCase):
        return part.kind
    if isinstance(part, Part) and part.kind in _SUITES:
        return part.kind
    if callable(getattr(part, "select", None)):
        return "selectors"  # a third-party selector keeping the protocol without subclassing Selector
    raise TypeError(f"{type(part).__qualname__} is not a frameselect part; subclass Selector, Evaluator, Dataset, Encoder, Answerer or Router")


def checks_for(part: Any) -> list[Check]:
    """The checks of the suite for the part's kind."""
    return _SUITES[_kind_of(part)]()


def parametrize_with_checks(parts: Iterable[Any]) -> Any:
    """A ``pytest.mark.parametrize("part, check", ...)`` over every check of every part.

    ``parts``: part instances, or :class:`PartCase` objects built when their
    test runs (see :func:`registry_cases`). Each (part, check) pair is its own
    test, with the id ``<part>-<check>``; the test body is ``check(part)``.
    """
    import pytest

    pairs = [(part, check) for part in parts for check in checks_for(part)]
    ids = [f"{label_of(part)}-{check.name}" for part, check in pairs]
    return pytest.mark.parametrize(("part", "check"), pairs, ids=ids)
