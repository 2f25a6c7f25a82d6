"""What a run covers with each sample: its *scope*, one small strategy object a plan holds.

Three scopes:

* :class:`OneVideo`: each sample is one video; its selector chooses from its pool;
* :class:`~frameselect._engine.scopes.across.AcrossVideos` ``(policy)``: a question
  may span several videos (or a joint selector chooses over them); the budget
  policy shares its budget among its videos (:mod:`frameselect.crossvideo`);
* :class:`~frameselect._engine.scopes.stream.Stream` ``(monitoring)``: a streaming
  selector answers each question from what its memory holds when it is asked.

The planner (:func:`frameselect._engine.plan.plan_run`) asks a scope to resolve the
selector (:meth:`Scope.resolve_selector`), to check the plan
(:meth:`Scope.check`) and for its configuration entries and label; the run's
loop calls :meth:`Scope.prepare` for each sample (its pools, features and
selections, within the budget's :class:`~frameselect._engine.budgets.Sized`) and
:meth:`Scope.score` for its record. The loop knows no concrete scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from frameselect._engine.scopes.across import AcrossVideos
from frameselect._engine.scopes.scope import OneVideo, Recorded, Scope
from frameselect._engine.scopes.stream import Stream
from frameselect.types import Sample

__all__ = ["Scope", "OneVideo", "AcrossVideos", "Stream", "Recorded", "default_scope"]


def default_scope(selectors: Sequence[Any], samples: Sequence[Sample], budget_policy: Any = None) -> Scope:
    """The scope a plan gets when none is given: several videos when a sample spans several, a selector is a joint one or a budget policy is named."""
    from frameselect.selectors.base import Selector

    if budget_policy is not None or any(s.is_multi_video for s in samples) or not all(isinstance(sel, Selector) for sel in selectors):
        return AcrossVideos(budget_policy)
    return OneVideo()
