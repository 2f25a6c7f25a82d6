"""The scope of questions over several videos (``docs/crossvideo.md``): :class:`AcrossVideos`.

A question's pools and features are keyed by ``VideoRef.id``; its budget is
shared among its videos by the scope's budget policy (``equal`` when none is
given), or spent by a joint selector itself. A joint selector that reads its
answer out through the answerer (``drives_answerer``) is asked through its
declared hooks (``use_encoder``, ``answer_view``, ``audit``, ``read_out``,
``metrics``); the scope knows no concrete one. One-video samples of the same
run are prepared and scored as :class:`~frameselect._engine.scopes.OneVideo` does.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from frameselect._engine.scopes.scope import Recorded, Scope
from frameselect.errors import FrameselectError
from frameselect.types import Answer, Sample, SampleRecord, VideoFrames

if TYPE_CHECKING:
    from frameselect._engine.budgets import Budget, Sized
    from frameselect._engine.plan import Plan
    from frameselect._engine.work import Prepared, RunContext

__all__ = ["AcrossVideos", "score_across", "select_across"]


@dataclass(frozen=True)
class AcrossVideos(Scope):
    """Questions that may span several videos, their budget shared by ``policy`` (a name or a :class:`~frameselect.crossvideo.BudgetPolicy`; None: ``equal``)."""

    policy: Any = None

    def with_parts(self) -> Scope:
        from frameselect._engine.checks import resolve_budget_policy

        return AcrossVideos(resolve_budget_policy(self.policy))

    def check(self, selector: Any, budget: Budget, encoder: Any, answerer: Any, samples: Sequence[Sample]) -> None:
        from frameselect._engine.checks import check_across

        check_across(selector, self.policy, encoder, answerer, budget.router, budget.tokens, samples, budget.bank if budget.router is not None else ())

    def configure(self, config: dict[str, Any]) -> None:
        from frameselect.parts import part_config

        if self.policy is not None:  # only when given: runs without one keep their ids
            config["budget_policy"] = part_config(self.policy)

    def prepare(self, p: Prepared, plan: Plan, ctx: RunContext, sized: Sized) -> None:
        from frameselect.selectors.base import Selector

        if p.sample.is_multi_video or not isinstance(sized.selector, Selector):
            select_across(p, plan, ctx, sized.selector, sized.across)
            return
        super().prepare(p, plan, ctx, sized)

    def score(self, p: Prepared, plan: Plan, answer: Answer | None) -> Recorded:
        from frameselect._engine.work import failure, guarded
        from frameselect.errors import AnswererError

        if p.across is None or p.error is not None:
            return super().score(p, plan, answer)
        if answer is not None and answer.error is not None:  # as for one video: the failure keeps no selection
            return Recorded(failure(p, AnswererError(answer.error)), videos=[])
        scored, error = guarded(lambda: score_across(p, plan, answer))
        if scored is None:
            return Recorded(failure(p, error or FrameselectError("no metrics")), videos=[])
        return Recorded(scored[0], videos=scored[1])


def select_across(p: Prepared, plan: Plan, ctx: RunContext, selector: Any, tokens: Any = None) -> None:
    """A question over several videos (or any sample of a joint selector): pools keyed by ``VideoRef.id``, selected within its budget.

    ``p.k`` is the question's total (a router's budget for it, routed). At a
    token budget, ``tokens`` is the question's plan
    (:class:`~frameselect._engine.token_budget.AcrossFramePlan`): each video gets the
    frames its token share buys, priced per video (each video is its own entry
    for the answerer), and the record's metadata holds the budget, each
    video's share, tokens and frame size; the ``tokens`` metric is their sum.
    """
    from frameselect._engine.prepare import sample_seed, video_pools
    from frameselect._engine.work import AcrossPrepared
    from frameselect.crossvideo.joint import JointSelector, select_across_videos
    from frameselect.selectors.base import check_selection

    sample = p.sample
    policy = plan.budget_policy
    joint = isinstance(selector, JointSelector)
    # the record's policy column names how the budget is shared, from the start: a question that fails before it is selected says so too
    p.policy = "joint" if joint else (policy.name if policy is not None else "equal")
    needs = set(selector.needs).union(*(e.needs for e in plan.evaluators)) | (set(policy.needs) if policy is not None else set())
    pools, features = video_pools(sample, plan, ctx, needs)
    if joint:
        selector.use_encoder(plan.encoder)
    if plan.tokens is not None and tokens is None:
        raise FrameselectError(f"sample {sample.id!r} has no token plan: one of its videos could not be read when the run was planned")
    shares = {vid: fp.k for vid, fp in tokens.plans.items()} if tokens is not None else None
    if shares is not None:
        p.k = sum(shares.values())
    multi = select_across_videos(sample, pools, features, p.k, selector=selector, policy=policy, seed=sample_seed(plan.seed, sample.id), shares=shares)
    ctx.counters.selector_calls += 1
    for vid, sel in multi.by_video.items():  # each video's count is the joint selector's or the budget policy's: any number
        check_selection(selector, sel, None, len(pools[vid]), sample, video=vid)
    if plan.token_model is not None:  # each video's frames priced as the answerer sends them: one entry per video
        priced = {}
        for vid, sel in multi.by_video.items():
            fp = tokens.plans[vid] if tokens is not None else None
            priced[vid] = plan.budget.price(sel, plan, pools[vid], ctx, fp)
        multi = dataclasses.replace(multi, by_video=priced)
        used = {vid: sel.tokens for vid, sel in priced.items()}
        p.metadata = {**p.metadata, "video_tokens": used}
        if tokens is not None:
            p.metadata.update(
                token_budget=tokens.budget,
                video_token_budgets=tokens.shares,
                video_frame_sizes={vid: list(fp.size) for vid, fp in tokens.plans.items()},
            )
    for ref in sample.video_refs:
        p.put(ref.id, pools[ref.id], multi.by_video[ref.id], features[ref.id])
    p.across = AcrossPrepared(multi, selector.answer_view(multi) if joint else multi, selector.audit(sample) if joint else None)
    p.policy = multi.policy


def score_across(p: Prepared, plan: Plan, answer: Answer | None) -> tuple[SampleRecord, list[Any]]:
    """The record of a question over several videos, and one stored selection row per video.

    Evaluators that read the answer score once (with the first video's pool and selection);
    the others score each video's selection in that video and the record keeps their mean over
    the videos (NaN values left out: a video without evidence has no evidence recall). Added:
    ``frames`` in all, ``binding_accuracy`` (bindings and ``metadata["entities"]``) and, for a
    joint selector that drives the answerer, its read-out answer, its record under its
    name in the metadata and its metrics (``read_out``, ``metrics``).
    """
    from frameselect._engine.work import ACROSS_DROPPED_METADATA, AcrossPrepared, score_sample
    from frameselect.crossvideo.joint import one_video_sample
    from frameselect.crossvideo.metrics import binding_accuracy, per_video_evidence_recall
    from frameselect.store import VideoSelectionRow

    across: AcrossPrepared = p.across
    sample: Sample = p.sample
    multi = across.multi
    meta: dict[str, Any] = {key: v for key, v in {**sample.metadata, **p.metadata}.items() if key not in ACROSS_DROPPED_METADATA}
    read_out: dict[str, Any] | None = None
    driver: Any = plan.selector
    if getattr(driver, "drives_answerer", False) and answer is not None:
        answer, read_out = driver.read_out(sample, answer, across.audited)
        meta[driver.name] = read_out
    refs = sample.video_refs
    first = refs[0].id
    answer_evs = [e for e in plan.evaluators if e.reads_answer]
    frame_evs = [e for e in plan.evaluators if e not in answer_evs]
    metrics = score_sample(answer_evs, sample, p.pools[first], multi.by_video[first], answer, p.features.get(first))
    per_video: dict[str, dict[str, float]] = {}
    for ref in refs:
        view = one_video_sample(sample, ref.id)
        per_video[ref.id] = score_sample(frame_evs, view, p.pools[ref.id], multi.by_video[ref.id], None, p.features.get(ref.id))
    keys = {key for values in per_video.values() for key in values} - set(metrics)
    for key in sorted(keys):
        vals = [v[key] for v in per_video.values() if key in v and not math.isnan(v[key])]
        metrics[key] = sum(vals) / len(vals) if vals else math.nan
    metrics["frames"] = float(len(multi))
    spent = [sel.tokens for sel in multi.by_video.values()]
    if spent and all(t is not None for t in spent):  # each video is its own entry for the answerer: the question costs their sum
        metrics["tokens"] = float(sum(t for t in spent if t is not None))
    entities = sample.metadata.get("entities")
    if multi.bindings and isinstance(entities, Mapping):
        metrics["binding_accuracy"] = binding_accuracy(multi, p.pools, entities)
    if read_out is not None:
        metrics.update(driver.metrics(read_out))
    meta["per_video_recall"] = per_video_evidence_recall(sample, p.pools, multi)[1]
    meta["bindings"] = [list(b) for b in multi.bindings]
    rows = [VideoSelectionRow(r.id, p.pools[r.id].video_id, multi.by_video[r.id], tuple(multi.by_video[r.id].timestamps(p.pools[r.id]))) for r in refs]
    record = SampleRecord(
        sample_id=sample.id,
        metrics=metrics,
        answer=None if answer is None else answer.text,
        answer_windows=None if answer is None else answer.windows,
        selection=multi.by_video[first].indices,
        timestamps=tuple(multi.by_video[first].timestamps(p.pools[first])),
        k=p.k,
        policy=multi.policy,
        metadata=meta,
        videos=tuple(VideoFrames(row.video, row.selection.indices, row.timestamps) for row in rows),
    )
    return record, rows
