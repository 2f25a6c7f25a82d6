"""The evaluator interface.

An evaluator scores one sample (``score``) and aggregates the per-sample
records of a run (``aggregate``). Selection-level metrics need no answer;
answer-level ones set ``needs_answer``. Each metric is also a plain function.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

from frameselect.parts import Part
from frameselect.types import Answer, CandidatePool, Features, Sample, SampleRecord, Selection

__all__ = ["Evaluator", "mean_of"]


def mean_of(records: Sequence[SampleRecord], key: str) -> float:
    values = [float(r.metrics[key]) for r in records if r.status == "ok" and key in r.metrics and not math.isnan(float(r.metrics[key]))]
    return sum(values) / len(values) if values else math.nan


class Evaluator(Part):
    """Base class. ``metrics`` lists the benchmark-level keys ``aggregate`` returns;
    ``score_keys`` the per-sample keys ``score`` returns (the same by default).

    Capabilities are declared on the class: ``needs_answer``, ``uses_answer``,
    ``needs`` (features besides the selection) and ``higher_is_better``.
    """

    kind: ClassVar[str] = "evaluators"
    needs_answer: ClassVar[bool] = False
    #: scores the answer's time windows when the run has an answerer (answers are then asked for), else the selection
    uses_answer: ClassVar[bool] = False
    #: features this evaluator needs besides the selection ("embeddings", "relevance")
    needs: ClassVar[frozenset[str]] = frozenset()
    higher_is_better: ClassVar[bool] = True

    @property
    def reads_answer(self) -> bool:
        """Whether a run with an answerer asks for answers for this evaluator (it needs them, or scores them when given)."""
        return self.needs_answer or self.uses_answer

    @property
    def metrics(self) -> tuple[str, ...]:
        """The keys :meth:`aggregate` writes into a table row."""
        return (self.name,)

    @property
    def score_keys(self) -> tuple[str, ...]:
        """The keys :meth:`score` may write into a record (the ``metrics`` unless the aggregate differs)."""
        return self.metrics

    def score(self, sample: Sample, pool: CandidatePool, selection: Selection, answer: Answer | None, features: Features | None = None) -> Mapping[str, float]:
        """Metric values for one sample. ``features`` holds what the run computed
        (frame embeddings, relevance) for evaluators that declare ``needs``."""
        raise NotImplementedError

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, float]:
        """Benchmark-level values; the mean over samples unless overridden."""
        return {m: mean_of(records, m) for m in self.metrics}
