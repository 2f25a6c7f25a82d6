"""The base of every scope (:class:`Scope`), the one-video scope (:class:`OneVideo`) and what a scope scores (:class:`Recorded`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from frameselect.errors import ConfigError, FrameselectError
from frameselect.types import Answer, Sample, SampleRecord, Selection

if TYPE_CHECKING:
    from frameselect._engine.budgets import Budget, Sized
    from frameselect._engine.plan import Plan
    from frameselect._engine.work import Prepared, RunContext
    from frameselect.store import VideoSelectionRow

__all__ = ["Scope", "OneVideo", "Recorded"]


@dataclass(frozen=True)
class Recorded:
    """A sample's record and what the store keeps beside it (its selection, or one row per video)."""

    record: SampleRecord
    selection: Selection | None = None
    video_id: str = ""
    videos: Sequence[VideoSelectionRow] = ()


class Scope:
    """The base of every scope: one video a sample, selected by a :class:`~frameselect.selectors.base.Selector`."""

    #: the run's mode (:class:`frameselect._engine.plan.Mode` value) when its budget is not routed
    mode = "run"
    #: whether the run's frames are priced by a cost model (a token budget, or the answerer's own)
    prices = True

    # -- planning ---------------------------------------------------------------------------

    def resolve_selector(self, selector: Any, params: Mapping[str, Any]) -> Any:
        """The selector from a registered name (with ``params``) or an instance."""
        from frameselect._engine.checks import resolve_selector

        return resolve_selector(selector, params)

    def with_parts(self) -> Scope:
        """The scope with its parts resolved (the planner's)."""
        return self

    def check_parts(self, selector: Any, budget: Budget, encoder: Any, answerer: Any) -> None:
        """The scope's checks of the parts, as soon as they are resolved (a :class:`ConfigError`)."""

    def check(self, selector: Any, budget: Budget, encoder: Any, answerer: Any, samples: Sequence[Sample]) -> None:
        """The scope's checks once the samples are read (a :class:`ConfigError` before any sample is run)."""
        from frameselect.selectors.base import Selector

        for part in (selector, *budget.bank):
            if not isinstance(part, Selector):
                raise ConfigError(f"{getattr(part, 'name', part)!r} selects over several videos: give scope=AcrossVideos() (or no scope)")
        multi = [s.id for s in samples if s.is_multi_video]
        if multi:
            raise ConfigError(f"sample {multi[0]!r} spans several videos, and the scope is one video: give scope=AcrossVideos() (or no scope)")

    def configure(self, config: dict[str, Any]) -> None:
        """The scope's entries in the run's configuration (and so its fingerprint)."""

    def label(self, selector: Any, budget: Budget) -> str:
        return budget.label(selector)

    # -- the loop ---------------------------------------------------------------------------

    def prepare(self, p: Prepared, plan: Plan, ctx: RunContext, sized: Sized) -> None:
        """A sample's pool, features and selection at its budget (priced where the run has a cost model)."""
        from frameselect._engine.prepare import featurize, run_selector
        from frameselect._engine.work import build_pool, sample_videos
        from frameselect.selectors.base import check_selection

        sample, selector = p.sample, sized.selector
        if selector is None:
            raise ConfigError("this plan names no selector; plans of evaluate() come from plan_run()")
        for video in sample_videos(sample):
            pool = build_pool(sample, plan.pool, ctx, video)
            needs = set(selector.needs).union(*(e.needs for e in plan.evaluators)) | plan.budget.needs
            features = featurize(pool, sample, needs, plan.encoder, ctx, query_text=plan.query_text)
            p.k = plan.budget.choose(p, plan, ctx, selector, pool, features)
            selection = run_selector(selector, plan, pool, sample, p.k, features)
            ctx.counters.selector_calls += 1
            check_selection(selector, selection, p.k, len(pool), sample)
            if plan.tokens is not None and sized.frame_plan is None:
                raise FrameselectError(f"sample {sample.id!r} has no token plan: its video could not be read when the run was planned")
            selection = plan.budget.price(selection, plan, pool, ctx, sized.frame_plan)
            p.put(video, pool, selection, features)

    def score(self, p: Prepared, plan: Plan, answer: Answer | None) -> Recorded:
        """The sample's record (its failure where it has no selection, its answer failed or an evaluator fails on it)."""
        from frameselect._engine.work import failure, guarded, score_sample
        from frameselect.errors import AnswererError

        one = None if p.error is not None else p.one()
        if one is None or one[1] is None:
            return Recorded(failure(p, p.error or FrameselectError(f"the prepare step gave sample {p.sample.id!r} no selection")), video_id=p.video_id)
        if answer is not None and answer.error is not None:
            return Recorded(failure(p, AnswererError(answer.error)), video_id=p.video_id)
        pool, selection, features = one[0], one[1], one[2]
        metrics, error = guarded(lambda: score_sample(plan.evaluators, p.sample, pool, selection, answer, features))
        if metrics is None:
            return Recorded(failure(p, error or FrameselectError("no metrics")), video_id=p.video_id)
        record = SampleRecord(
            sample_id=p.sample.id,
            metrics=metrics,
            answer=None if answer is None else answer.text,
            answer_windows=None if answer is None else answer.windows,
            selection=selection.indices,
            timestamps=tuple(selection.timestamps(pool)),
            k=p.k,
            policy=p.policy,
            metadata={**p.sample.metadata, **p.metadata},
            filled=selection.filled,
        )
        return Recorded(record, selection, p.video_id)


class OneVideo(Scope):
    """One video a sample (the scope of a run whose samples each have one video and whose selector is a per-video one)."""

    def __repr__(self) -> str:
        return "OneVideo()"

    def __eq__(self, other: object) -> bool:
        return type(other) is OneVideo

    def __hash__(self) -> int:
        return hash("OneVideo")
