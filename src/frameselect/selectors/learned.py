"""``bayes_grpo``: the learned selector, a policy trained with the answering model in the loop.

A small torch model (:mod:`frameselect.learned.policy`) scores every pool
frame from inputs the pipeline already has (query relevance, relative time,
neighbouring frames, embedding novelty; :mod:`frameselect.learned.inputs`);
the selection is the ``k`` frames with the largest logits (deterministic,
ties to the earlier frame). The policy is trained by ``frameselect train``:
stage 1 a supervised prior on evidence labels, stage 2 Bayesian GRPO on the
frozen answerer's negative log-likelihood of the right option (see
docs/learned.md and :mod:`frameselect._studies.learned.train`).

Parameters: ``checkpoint``, a built-in name (``haystack``: trained on the
haystack generator's ``train`` domain, other footage, objects and words than
the default benchmark's, which evaluates it out of distribution) or a path; ``stage``, ``"posterior"`` (after stage 2) or
``"prior"`` (the stage-1 policy stored in the same file); ``weights``, the
checkpoint's fingerprint, filled in on construction (a non-empty value that
does not match is an error), so it enters every run's fingerprint.

torch is needed to select (``pip install 'frameselect[learned]'``); listing and
constructing the selector need nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from frameselect._core.memo import memoized
from frameselect.errors import SelectionError
from frameselect.registry import selectors
from frameselect.selectors.base import Scored, Selector
from frameselect.types import CandidatePool, Features, Query

__all__ = ["BayesGRPO"]

STAGES = ("posterior", "prior")


def _torch() -> Any:
    """torch, or a :class:`SelectionError` naming the extra to install."""
    try:
        import torch
    except ImportError:
        raise SelectionError("selector 'bayes_grpo' needs torch: pip install 'frameselect[learned]'") from None
    return torch


@memoized(maxsize=8)
def _policy(path: str, fingerprint: str, stage: str) -> Any:
    """The policy of a checkpoint (loaded once per process; keyed by its fingerprint)."""
    from frameselect.learned.checkpoint import load_tensors
    from frameselect.learned.policy import policy_from_arrays

    arrays, meta = load_tensors(path)
    if meta["fingerprint"] != fingerprint:
        raise SelectionError(f"checkpoint {path} changed since the selector was created; create it again")
    if not any(k.startswith(stage + ".") for k in arrays):
        raise SelectionError(f"checkpoint {path} holds no {stage!r} policy")
    return policy_from_arrays(arrays, json.loads(meta["model"]), stage)


@selectors.register("bayes_grpo")
@dataclass(frozen=True)
class BayesGRPO(Selector):
    """Learned frame scores (stage-1 prior + GRPO on the answerer's likelihood); top-k at test time."""

    checkpoint: str = "haystack"
    stage: str = "posterior"
    weights: str = ""

    needs: ClassVar[frozenset[str]] = frozenset({"embeddings", "relevance"})

    def __post_init__(self) -> None:
        from frameselect.learned.checkpoint import read_header, resolve_checkpoint

        if self.stage not in STAGES:
            raise SelectionError(f"bayes_grpo stage must be one of {STAGES}, got {self.stage!r}")
        meta = read_header(resolve_checkpoint(self.checkpoint))
        if self.weights and self.weights != meta["fingerprint"]:
            raise SelectionError(f"checkpoint {self.checkpoint!r} has fingerprint {meta['fingerprint']}, not the weights={self.weights!r} asked for")
        object.__setattr__(self, "weights", meta["fingerprint"])

    def _select(self, pool: CandidatePool, query: Query | None, k: int, features: Features, rng: np.random.Generator) -> Scored:
        torch = _torch()
        from frameselect.learned.checkpoint import resolve_checkpoint
        from frameselect.learned.inputs import frame_inputs

        policy = _policy(str(resolve_checkpoint(self.checkpoint)), self.weights, self.stage)
        x = frame_inputs(pool.timestamps, pool.duration, features.relevance(), features.embeddings, k)
        with torch.no_grad():
            logits = policy(torch.from_numpy(x)).double().numpy()
        order = np.lexsort((np.arange(len(logits)), -logits))[:k]
        chosen = sorted(int(i) for i in order)
        return Scored(chosen, [float(logits[i]) for i in chosen])
