"""Cost evaluators: selection latency, frame counts, answering tokens and latency.

Lower is better for all of them. They let a table put a selector's cost next
to its accuracy, and the paired statistics compare costs like any metric.
"""

from __future__ import annotations

from collections.abc import Mapping

from frameselect.evaluators.base import Evaluator
from frameselect.registry import evaluators
from frameselect.types import Answer, CandidatePool, Features, Sample, Selection

__all__ = ["SelectionLatency", "FrameCounts", "AnswerCost", "answer_cost"]


def answer_cost(answer: Answer) -> dict[str, float]:
    """Tokens and latency of one answer.

    >>> answer_cost(Answer("A", latency_s=0.5, prompt_tokens=900, completion_tokens=3))["answer_tokens"]
    903.0
    """
    return {
        "answer_prompt_tokens": float(answer.prompt_tokens),
        "answer_completion_tokens": float(answer.completion_tokens),
        "answer_tokens": float(answer.prompt_tokens + answer.completion_tokens),
        "answer_latency_s": float(answer.latency_s),
    }


@evaluators.register("selection_latency")
class SelectionLatency(Evaluator):
    """Wall-clock seconds the selector took for the sample (``Selection.latency_s``; features excluded)."""

    higher_is_better = False

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("selection_latency_s",)

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {"selection_latency_s": float(selection.latency_s)}


@evaluators.register("frames")
class FrameCounts(Evaluator):
    """Frames selected (``frames``) and candidate-pool size (``pool_frames``) per sample."""

    higher_is_better = False

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("frames", "pool_frames")

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        return {"frames": float(len(selection)), "pool_frames": float(len(pool))}


@evaluators.register("answer_cost")
class AnswerCost(Evaluator):
    """Answering cost: prompt, completion and total tokens, and latency (s), from the ``Answer``."""

    needs_answer = True
    higher_is_better = False

    @property
    def metrics(self) -> tuple[str, ...]:
        return ("answer_prompt_tokens", "answer_completion_tokens", "answer_tokens", "answer_latency_s")

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        if answer is None:
            return {}
        return answer_cost(answer)
