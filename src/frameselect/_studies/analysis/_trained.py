"""Stored runs of a learned selector: what its checkpoint was trained on, in or out of the run's distribution.

A run whose selector configuration names a learned checkpoint and its
fingerprint (``bayes_grpo``'s ``checkpoint`` and ``weights``, also inside a
selector that wraps another) is marked :data:`TRAINED_MARK` in the tables and
the report, with a footnote: the checkpoint's training suite and whether the
run's dataset is that distribution, decided as ``frameselect bench`` decides it
(:func:`frameselect.learned.checkpoint.training_of`). The run's dataset is
re-created from its stored ``dataset_spec`` only where its class defines a
``suite_identity`` (haystack: the domain and its fingerprint; creating it reads
nothing); any other dataset is its name and stored id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from frameselect.errors import FrameselectError

__all__ = ["TRAINED_MARK", "learned_checkpoint", "stored_suite", "suite_title", "training_footnote", "trained_line"]

#: the mark after the name of a run whose selector was trained
TRAINED_MARK = "†"


def learned_checkpoint(selector: Any) -> tuple[str, str] | None:
    """``(checkpoint, weights)`` of a stored selector configuration that selects with a learned checkpoint, else None.

    >>> learned_checkpoint({"name": "bayes_grpo", "params": {"checkpoint": "haystack", "stage": "posterior", "weights": "ab12"}})
    ('haystack', 'ab12')
    >>> learned_checkpoint({"name": "multires", "params": {"inner": {"kind": "selectors", "name": "bayes_grpo", "params": {"checkpoint": "x", "weights": "cd"}}}})
    ('x', 'cd')
    >>> learned_checkpoint({"name": "topk", "params": {"k_min": 1}}) is None
    True
    """
    if not isinstance(selector, Mapping):
        return None
    params = selector.get("params")
    if not isinstance(params, Mapping):
        return None
    checkpoint, weights = params.get("checkpoint"), params.get("weights")
    if isinstance(checkpoint, str) and checkpoint and isinstance(weights, str) and weights:
        return checkpoint, weights
    for value in params.values():  # a selector that wraps another: the inner one's checkpoint
        if isinstance(value, Mapping) and "params" in value:
            found = learned_checkpoint(value)
            if found is not None:
                return found
    return None


def stored_suite(config: Mapping[str, Any]) -> dict[str, str]:
    """:func:`~frameselect.learned.checkpoint.suite_identity` of a stored run's dataset, from its configuration."""
    from frameselect.learned.checkpoint import suite_identity
    from frameselect.registry import datasets, revive

    dataset_id = str(config.get("dataset") or "")
    spec = config.get("dataset_spec")
    name = str(spec.get("name") or "") if isinstance(spec, Mapping) else ""
    name = name or dataset_id.split(":", 1)[0]
    if isinstance(spec, Mapping) and name:
        try:
            defines = hasattr(datasets.get(name), "suite_identity")
        except FrameselectError:
            defines = False
        if defines:
            try:
                return suite_identity(revive(spec, kind="datasets"))
            except (FrameselectError, TypeError, ValueError):
                pass  # parameters this version refuses: the name and stored id below
    return {"dataset": name, "dataset_id": dataset_id}


def suite_title(suite: Mapping[str, str]) -> str:
    """``"haystack, domain bench"``: a suite as a footnote names it.

    >>> suite_title({"dataset": "haystack", "domain": "bench", "domain_fingerprint": "x"}), suite_title({"dataset": "tiny", "dataset_id": "tiny-v2"})
    ('haystack, domain bench', 'tiny')
    """
    text = suite.get("dataset") or "unknown"
    return f"{text}, domain {suite['domain']}" if suite.get("domain") else text


def training_footnote(config: Mapping[str, Any]) -> str:
    """A stored run's footnote, ``"trained on …; in distribution for …"`` (or ``"trained on: unknown (checkpoint
    not found)"``); ``""`` for a run whose selector is not a learned one."""
    from frameselect.learned.checkpoint import training_of

    found = learned_checkpoint(config.get("selector"))
    if found is None:
        return ""
    checkpoint, weights = found
    evaluated = stored_suite(config)
    return training_of(checkpoint, evaluated, weights=weights).footnote(suite_title(evaluated))


def trained_line(label: str, footnote: str) -> str:
    """``"(† bayes_grpo@k=8: trained on …)"``: the footnote under a table.

    >>> trained_line("bayes_grpo", "trained on: unknown (checkpoint not found)")
    '(† bayes_grpo: trained on: unknown (checkpoint not found))'
    """
    return f"({TRAINED_MARK} {label}: {footnote})"
